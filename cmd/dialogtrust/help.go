package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// The help is printed here rather than by package flag: flag's dump spells every flag
// with one dash while the docs spell them --flag, knows nothing of groups ("wit") or
// examples, and goes to the flag set's output (stderr). A CLI library (cobra, kong,
// urfave/cli) would bring all that, and a second way of declaring flags next to the
// twenty-five flag sets the commands have; this small printer reads those flag sets
// instead, so that the help cannot list a flag the command does not have.

// helpText is what the help says of one command besides its synopsis and flags.
type helpText struct {
	summary string // one line: what the command does
	example string // one command line, without "dialogtrust "
	doc     string // where it is documented: a page of docs/ and its anchor
	notes   string // more text after the flags, or ""
}

// groupText is what the help says of a group of commands ("wit").
type groupText struct {
	summary, example, doc string
}

var groups = map[string]groupText{
	"key":     {"private keys (JWK) for issuers and workloads", "key generate --alg ES256 --out issuer.jwk", "docs/cli.md#dialogtrust-key"},
	"wit":     {"Workload Identity Tokens: issue one offline, verify one, or request one from a WIT issuer", "wit verify --trust trust.json @wit.txt", "docs/cli.md#dialogtrust-wit"},
	"wpt":     {"Workload Proof Tokens: make and check the proof of a WIT's key for one request", "wpt new --key workload.jwk --wit @wit.txt --aud https://b.example/x", "docs/cli.md#dialogtrust-wpt"},
	"httpsig": {"HTTP message signatures with a WIT's key: sign and verify a raw HTTP/1.1 request", "httpsig sign --key workload.jwk --wit @wit.txt --aud https://b.example/x < request.http", "docs/cli.md#dialogtrust-httpsig"},
	"handoff": {"signed handoffs between agents: offer, verify, status, digest", "handoff verify --trust trust.json --self spiffe://b.example/agent/b1 @handoff.json", "docs/cli.md#dialogtrust-handoff"},
	"txn":     {"Transaction Tokens: request one from a TTS, verify one", "txn verify --jwks https://tts.example/jwks --audience dev.local @a1.txn", "docs/cli.md#dialogtrust-txn"},
	"chain":   {"identity chaining across trust domains: a grant from AS A, redeemed at the peer's AS B", "chain redeem --token-endpoint http://127.0.0.1:8082/token --wit @a1.wit --key a1.jwk --grant @a1.grant", "docs/cli.md#dialogtrust-chain"},
	"policy":  {"issuance policy: run a TTS policy on requests with expected decisions", "policy test tts.yaml cases.yaml", "docs/cli.md#dialogtrust-policy"},
	"audit":   {"the audit trail of a TTS: verify its chain, checkpoints and signatures", "audit verify --key tts-jwks.json --checkpoint tts.log.checkpoint tts.log", "docs/cli.md#dialogtrust-audit"},
	"bench":   {"load tools for the TTS and for a verifying receiver", "bench tts --url http://127.0.0.1:8081 --wit-issuer http://127.0.0.1:8080", "docs/cli.md#dialogtrust-bench"},
}

var helps = map[string]helpText{
	"policy test":           {summary: "run a TTS configuration's issuance policy on requests and compare the decisions", example: "policy test tts.yaml cases.yaml", doc: "docs/cli.md#dialogtrust-policy"},
	"audit verify":          {summary: "verify a TTS's audit trail: a removed, altered, reordered or inserted record, a checkpoint that does not hold, a cut tail", example: "audit verify --key tts-jwks.json --checkpoint tts.log.checkpoint tts.log.2* tts.log", doc: "docs/cli.md#dialogtrust-audit"},
	"dev":                   {summary: "a development trust domain and its peer on loopback until Ctrl-C; prints the next commands", example: "dev --proxies", doc: "docs/cli.md#dialogtrust-dev"},
	"key generate":          {summary: "make a private key and print it as a JWK, or write it to a new file", example: "key generate --alg ES256 --out issuer.jwk", doc: "docs/cli.md#dialogtrust-key"},
	"key public":            {summary: "print the public half of a private JWK", example: "key public --in issuer.jwk", doc: "docs/cli.md#dialogtrust-key"},
	"wit issue":             {summary: "issue a WIT offline with an issuer key you hold", example: "wit issue --issuer-key issuer.jwk --iss https://a.example --sub wimse://a.example/agent/a1 --cnf-key workload.jwk", doc: "docs/cli.md#keys-and-wits-offline"},
	"wit verify":            {summary: "verify a WIT against trusted issuer keys and print its claims", example: "wit verify --trust trust.json @wit.txt", doc: "docs/cli.md#keys-and-wits-offline"},
	"wit request":           {summary: "get a WIT from a WIT issuer for a key made here", example: "wit request --issuer http://127.0.0.1:8080 --workload wimse://dev.local/agent/a1 --key-out a1.jwk", doc: "docs/cli.md#dialogtrust-wit-request"},
	"wpt new":               {summary: "make a Workload Proof Token for one request", example: "wpt new --key workload.jwk --wit @wit.txt --aud https://b.example/x", doc: "docs/cli.md#dialogtrust-wpt"},
	"wpt verify":            {summary: "verify a Workload Proof Token with its WIT", example: "wpt verify --trust trust.json --wit @wit.txt --aud https://b.example/x @proof.txt", doc: "docs/cli.md#dialogtrust-wpt"},
	"httpsig sign":          {summary: "sign a raw HTTP/1.1 request read from stdin with the WIT's key", example: "httpsig sign --key workload.jwk --wit @wit.txt --aud https://b.example/x < request.http", doc: "docs/cli.md#dialogtrust-httpsig"},
	"httpsig verify":        {summary: "verify a signed raw HTTP/1.1 request read from stdin", example: "httpsig verify --trust trust.json --aud https://b.example/x < signed.http", doc: "docs/cli.md#dialogtrust-httpsig"},
	"handoff offer":         {summary: "sign a handoff offer and print the Handoff", example: "handoff offer --key planner.jwk @offer.json", doc: "docs/cli.md#dialogtrust-handoff"},
	"handoff verify":        {summary: "verify a Handoff as its delegate would and print the decision", example: "handoff verify --trust trust.json --self spiffe://b.example/agent/b1 @handoff.json", doc: "docs/cli.md#dialogtrust-handoff"},
	"handoff status":        {summary: "sign a status report on an offer", example: "handoff status --key b1.jwk --offer @handoff.json --state accepted", doc: "docs/cli.md#dialogtrust-handoff"},
	"handoff status verify": {summary: "verify a status report on an offer", example: "handoff status verify --trust trust.json --offer @handoff.json @status.json", doc: "docs/cli.md#dialogtrust-handoff"},
	"handoff digest":        {summary: "print the digest of a signed offer, a Handoff or raw octets", example: "handoff digest @handoff.json", doc: "docs/cli.md#dialogtrust-handoff"},
	"txn request":           {summary: "get a Txn-Token from a TTS, authenticated with a WIT and a proof", example: "txn request --tts http://127.0.0.1:8081 --wit @a1.wit --key a1.jwk --self-signed alice@dev.local --scope trip.read --audience dev.local --dialog D1", doc: "docs/cli.md#dialogtrust-txn"},
	"txn verify":            {summary: "verify a Txn-Token as a receiver does and print its claims", example: "txn verify --jwks http://127.0.0.1:8081/.well-known/jwks.json --audience dev.local --dialog D1 @a1.txn", doc: "docs/cli.md#dialogtrust-txn"},
	"chain grant":           {summary: "exchange a Txn-Token at AS A for a JWT authorization grant for a peer AS", example: "chain grant --tts http://127.0.0.1:8081 --wit @a1.wit --key a1.jwk --txn-token @a1.txn --audience http://127.0.0.1:8082", doc: "docs/cli.md#dialogtrust-chain"},
	"chain redeem":          {summary: "redeem a grant at the peer AS B for an access token", example: "chain redeem --token-endpoint http://127.0.0.1:8082/token --wit @a1.wit --key a1.jwk --grant @a1.grant", doc: "docs/cli.md#dialogtrust-chain"},
	"revoke":                {summary: "revoke a dialog, a workload or a transaction at the TTS's admin API", example: "revoke --admin https://tts.a.example:8444/admin/revocations --wit @ops.wit --key ops.jwk --dialog D1 --reason runaway", doc: "docs/cli.md#dialogtrust-revoke"},
	"revoke list":           {summary: "list the live revocations", example: "revoke list --admin https://tts.a.example:8444/admin/revocations --wit @ops.wit --key ops.jwk", doc: "docs/cli.md#dialogtrust-revoke"},
	"revoke lift":           {summary: "lift a revocation", example: "revoke lift --admin https://tts.a.example:8444/admin/revocations --wit @ops.wit --key ops.jwk --dialog D1", doc: "docs/cli.md#dialogtrust-revoke"},
	"revoke page":           {summary: "print a one-time login link to the operator's page", example: "revoke page --admin https://tts.a.example:8444/admin/revocations --wit @ops.wit --key ops.jwk", doc: "docs/cli.md#dialogtrust-revoke-page"},
	"conformance":           {summary: "run the WIMSE conformance vectors (default: the wimsey ones built in)", example: "conformance", doc: "docs/cli.md#dialogtrust-conformance"},
	"demo":                  {summary: "two trust domains end to end: a picture of who called whom, every check, what it proved", example: "demo --report demo.html", doc: "docs/cli.md#dialogtrust-demo"},
	"proxy":                 {summary: "egress and ingress proxies for agents in any language", example: "proxy --config proxy.yaml --check-config", doc: "docs/proxy.md"},
	"bench verify":          {summary: "load a verifying receiver (or verify in process) and report throughput and latency", example: "bench verify --wit-issuer http://127.0.0.1:8080 --duration 5s", doc: "docs/cli.md#dialogtrust-bench"},
	"bench receiver":        {summary: "a receiver that verifies each request, for bench verify --url", example: "bench receiver --trust http://127.0.0.1:8080/.well-known/jwks.json", doc: "docs/cli.md#dialogtrust-bench"},
	"bench tts":             {summary: "load a TTS with token requests and report throughput and latency", example: "bench tts --url http://127.0.0.1:8081 --wit-issuer http://127.0.0.1:8080", doc: "docs/cli.md#dialogtrust-bench", notes: benchTTSHelp},
}

// helpRequest is what parse returns for -h, -help or --help: the command's flag set, for
// its help.
type helpRequest struct{ fs *flag.FlagSet }

func (helpRequest) Error() string { return "help requested" }
func (helpRequest) Unwrap() error { return flag.ErrHelp }

// isHelpFlag says whether a is one of the spellings package flag takes for help.
func isHelpFlag(a string) bool {
	return a == "-h" || a == "--h" || a == "-help" || a == "--help"
}

// flagsOf returns the flag set of c, by running it with --help: every command parses its
// flags before it does anything else, so this has no effect but the help request.
func flagsOf(c command) *flag.FlagSet {
	var hr helpRequest
	if err := c.run([]string{"--help"}, strings.NewReader(""), io.Discard, io.Discard); errors.As(err, &hr) {
		return hr.fs
	}
	return flag.NewFlagSet(c.name, flag.ContinueOnError)
}

// printOverview prints the list of commands and groups.
func printOverview(w io.Writer) {
	fmt.Fprint(w, `dialogtrust: workload identity (WIMSE), Transaction Tokens, dialogs and signed handoffs
on the command line.

Usage:
  dialogtrust <command> [flags] [arguments]
  dialogtrust help <command>     (or dialogtrust <command> --help): its flags and an example

Commands:
`)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, helps[c.name].summary)
	}
	fmt.Fprint(w, `
Exit status: 0 success, 1 rejected or failed ("error: <code>" on stderr), 2 usage error.
Documentation: docs/cli.md
`)
}

// printCommandHelp prints the help of one command: summary, synopsis, flags, example and
// where it is documented.
func printCommandHelp(w io.Writer, c command, fs *flag.FlagSet) {
	h := helps[c.name]
	fmt.Fprintf(w, "dialogtrust %s: %s\n\nUsage:\n  dialogtrust %s %s\n", c.name, h.summary, c.name, c.usage)
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		l := "  --" + f.Name
		if name != "" {
			l += " " + name
		}
		l += "\n        " + usage
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			l += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		lines = append(lines, l)
	})
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(lines, "\n"))
	}
	if h.notes != "" {
		fmt.Fprint(w, h.notes)
	}
	fmt.Fprintf(w, "\nExample:\n  dialogtrust %s\n\nDocumentation: %s\n", h.example, h.doc)
}

// printGroupHelp prints the help of a group: its commands' synopses, an example and
// where it is documented.
func printGroupHelp(w io.Writer, group string) {
	g := groups[group]
	fmt.Fprintf(w, "dialogtrust %s: %s\n\nCommands:\n", group, g.summary)
	for _, c := range commands {
		if strings.HasPrefix(c.name, group+" ") {
			fmt.Fprintf(w, "  dialogtrust %s %s\n", c.name, c.usage)
		}
	}
	fmt.Fprintf(w, "\nRun \"dialogtrust help %s <command>\" for its flags.\n\nExample:\n  dialogtrust %s\n\nDocumentation: %s\n", group, g.example, g.doc)
}

// lookup finds the command or group that args start with: the command with the most
// words, else the group; n is how many of args name it.
func lookup(args []string) (c *command, group string, n int) {
	for i := range commands {
		words := strings.Fields(commands[i].name)
		// "key generate" is two words on a shell command line and one in tests.
		if len(args) >= 1 && args[0] == commands[i].name && (c == nil || n < 1) {
			c, n = &commands[i], 1
			continue
		}
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == commands[i].name && len(words) > n {
			c, n = &commands[i], len(words)
		}
	}
	if c != nil {
		return c, "", n
	}
	if len(args) >= 1 {
		if _, ok := groups[args[0]]; ok {
			return nil, args[0], 1
		}
	}
	return nil, "", 0
}

// unknownCommand says that args name no command, and which one comes nearest.
func unknownCommand(w io.Writer, args []string) int {
	typed := args[0]
	if _, ok := groups[args[0]]; ok && len(args) > 1 {
		typed = args[0] + " " + args[1]
	}
	fmt.Fprintf(w, "dialogtrust: unknown command %q\n", typed)
	if s := nearest(args); s != "" {
		fmt.Fprintf(w, "Did you mean \"dialogtrust %s\"?\n", s)
	}
	fmt.Fprintln(w, `Run "dialogtrust help" for the list of commands.`)
	return 2
}

// nearest returns the command or group name nearest to the words args start with, by
// edit distance, or "" when none is near enough to be a likely typo. Each name is
// compared with as many words of args as it has; at equal distance the longer name
// wins ("keys generate" is "key generate", not "key").
func nearest(args []string) string {
	names := make([]string, 0, len(commands)+len(groups))
	for _, c := range commands {
		names = append(names, c.name)
	}
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	_, inGroup := groups[args[0]]
	best, bestD := "", 1<<30
	for _, name := range names {
		k := len(strings.Fields(name))
		if k > len(args) || (inGroup && len(args) > 1 && k == 1) {
			continue // "wit sign" is a command of wit or of another group, not "wpt"
		}
		typed := strings.Join(args[:k], " ")
		d := editDistance(typed, name)
		// Prefer the longer name at equal distance: "wit verfy" is "wit verify", not "wit".
		if d < bestD || (d == bestD && len(name) > len(best)) {
			best, bestD = name, d
		}
	}
	if bestD > 2 && bestD*3 > len(best) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes; the names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
