package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/errcode"
)

type command struct {
	name, usage string
	run         func(args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands = []command{
	{"dev", "[--wit-addr 127.0.0.1:0] [--tts-addr 127.0.0.1:0] [--peer-addr 127.0.0.1:0] [--peer-wit-addr 127.0.0.1:0] [--admin-addr 127.0.0.1:0] [--open] [--proxies [--app URL] [--egress-addr 127.0.0.1:0]] [--log-format text|json]", devRun},
	{"key generate", "--alg ES256|EdDSA|Ed25519 [--out FILE [--force]]", keyGenerate},
	{"key public", "[--in FILE]", keyPublic},
	{"wit issue", "--issuer-key FILE --iss URI --sub ID --cnf-key FILE [--ttl 1h]", witIssue},
	{"wit verify", "--trust JWKS_FILE|URL [--iss URI] [--now UNIX] [--skew 30s] [--json] [TOKEN|-]", witVerify},
	{"wit request", "--issuer URL [--svid CERT --svid-key KEY --bundle PEM [--server-id ID] | --assertion-key FILE --workload ID | --workload ID] [--sub ID] [--alg ES256] [--ttl D] [--key-out FILE] [--timeout 30s]", witRequest},
	{"wpt new", "--key FILE --wit WIT --aud URL [--txn-token T] [--dialog-context V] [--ttl 60s]", wptNew},
	{"wpt verify", "--trust JWKS_FILE --wit WIT --aud URL [--txn-token T] [--dialog-context V] [--now UNIX] [--skew 30s] PROOF", wptVerify},
	{"httpsig sign", "--key FILE --wit WIT --aud URL [--sign-response] [--ttl 60s] < raw HTTP/1.1 request", httpsigSign},
	{"httpsig verify", "--trust JWKS_FILE --aud URL [--now UNIX] [--skew 30s] [--max-age D] < raw HTTP/1.1 request", httpsigVerify},
	{"handoff offer", "--key FILE [--form jws|cose] [--prev-handoff FILE [--no-chain]] [--ttl 120s] [--now UNIX] [OFFER_JSON|@FILE|-]", handoffOffer},
	{"handoff verify", "--trust FILE --self AGENTID [--dialog D] [--now UNIX] [--require-full-chain] [--trusted-origin ID]... [--allow-reentry ID]... [--max-chain 16] [--credential C] [--max-lifetime 5m] [--skew 1m] [HANDOFF|-]", handoffVerify},
	{"handoff status verify", "--trust FILE --offer HANDOFF [--self AGENTID] [STATUS|-]", handoffStatusVerify},
	{"handoff status", "--key FILE --offer HANDOFF --state STATE [--reason R] [--detail D] [--ref FILE]... [--now UNIX]", handoffStatus},
	{"handoff digest", "[--raw] [SIGNED|HANDOFF|@FILE|-]", handoffDigest},
	{"txn request", "--tts URL --wit WIT --key FILE (--subject-token T --subject-token-type URI | --self-signed SUB) --scope S --audience TD [--dialog D] [--details JSON] [--context JSON] [--proof wpt|httpsig] [--timeout 30s]", txnRequest},
	{"txn verify", "--jwks URL|FILE --audience TD [--dialog D] [--dialog-context V] [--iss URI] [--now UNIX] [--skew 30s] [--json] TOKEN", txnVerify},
	{"chain grant", "--tts URL --wit WIT --key FILE --txn-token T --audience PEER_AS_ISSUER [--scope S] [--proof httpsig|wpt] [--timeout 30s]", chainGrant},
	{"chain redeem", "--token-endpoint URL --wit WIT --key FILE --grant G [--scope S] [--proof httpsig|wpt] [--timeout 30s]", chainRedeem},
	{"revoke", "--admin URL --wit WIT --key FILE (--dialog D [--linked] | --workload ID | --txn T) [--reason R] [--ttl D] [--timeout 30s]", revokeRun},
	{"revoke list", "--admin URL --wit WIT --key FILE [--timeout 30s]", revokeList},
	{"revoke lift", "--admin URL --wit WIT --key FILE (--dialog D | --workload ID | --txn T) [--timeout 30s]", revokeLift},
	{"revoke page", "--admin URL --wit WIT --key FILE [--timeout 30s]", revokePage},
	{"policy test", "[--quiet] POLICY REQUESTS", policyTest},
	{"audit verify", "[--key JWKS_FILE] [--checkpoint FILE]... [--json] FILE...", auditVerify},
	{"conformance", "[--dir DIR]", conformanceRun},
	{"demo", "[--local ENVFILE | --local-env] [--json] [--report FILE]", demoRun},
	{"proxy", "--config FILE [--check-config] [--listen 127.0.0.1:9480] [--log-level LEVEL] [--log-format text|json]", proxyRun},
	{"bench verify", "[--url URL (--wit-issuer URL | --wit WIT --key FILE)] [--wit-issuer URL [--trust JWKS]] [--tts URL] [--proof httpsig|wpt] [--alg ES256|EdDSA] [--stateful] [--concurrency 16] [--duration 10s] [--rate R] [--server-pid PID] [--json] [...]", benchVerify},
	{"bench receiver", "--trust JWKS_URL|FILE [--listen 127.0.0.1:8090] [--path /invoke] [--trust-domain dev.local] [--tts-jwks URL|FILE] [--stateful] [--for D]", benchReceiver},
	{"bench tts", "--url URL (--wit-issuer URL [--workloads N] [--alg ES256|EdDSA] | --wit WIT --key FILE) [--proof wpt|httpsig] [--concurrency 16] [--duration 10s] [--warmup 2s] [--fresh-subject] [--server-pid PID] [--metrics URL] [--json] [...]", benchTTS},
}

// silentFailure ends the command with status 1 after it has said why on stdout.
type silentFailure struct{ msg string }

func (e silentFailure) Error() string { return e.msg }

// usageError is a mistake in the command line, not a rejection.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printOverview(stderr)
		return 2
	}
	if args[0] == "help" || isHelpFlag(args[0]) {
		return help(args[1:], stdout, stderr)
	}
	c, group, n := lookup(args)
	switch {
	case c != nil:
		return report(c.run(args[n:], stdin, stdout, stderr), *c, args[n:], stdout, stderr)
	case group != "" && len(args) == 1:
		// "dialogtrust wit": a command of the group is missing.
		fmt.Fprintf(stderr, "usage error: dialogtrust %s needs a command\n\n", group)
		printGroupHelp(stderr, group)
		return 2
	case group != "" && isHelpFlag(args[1]):
		printGroupHelp(stdout, group)
		return 0
	}
	return unknownCommand(stderr, args)
}

// help is "dialogtrust help [COMMAND]": the overview, a group's help or a command's, on
// stdout.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printOverview(stdout)
		return 0
	}
	c, group, n := lookup(args)
	switch {
	case c != nil && n == len(args):
		printCommandHelp(stdout, *c, flagsOf(*c))
		return 0
	case group != "" && len(args) == 1:
		printGroupHelp(stdout, group)
		return 0
	}
	return unknownCommand(stderr, args)
}

// report prints err and returns the exit status. It is the one place where errors reach
// the user: a code only for a rejection (an *errcode.Error), never the internal
// "unmapped"; a file that a flag or argument names and that cannot be opened is a usage
// error naming that flag.
func report(err error, c command, args []string, stdout, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var hr helpRequest
	if errors.As(err, &hr) {
		printCommandHelp(stdout, c, hr.fs)
		return 0
	}
	var ce *errcode.Error
	errors.As(err, &ce)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		bools, _ := boolFlags.Load(c.name)
		b, _ := bools.(map[string]bool)
		if where := namedBy(args, b, pe.Path); where != "" {
			err = usageError{where + ": " + pe.Error()}
		}
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "usage error:", err)
		fmt.Fprintf(stderr, "usage: dialogtrust %s %s\n", c.name, c.usage)
		fmt.Fprintf(stderr, "Run \"dialogtrust help %s\" for its flags and an example.\n", c.name)
		return 2
	}
	var sf silentFailure
	if errors.As(err, &sf) {
		return 1
	}
	if _, ok := errors.AsType[*kit.ConfigError](err); ok {
		// A configuration refused: where (file, line and caret, or the variable or
		// flag), not the code of a check it happens to reuse.
		fmt.Fprintf(stderr, "dialogtrust %s: %v\n", c.name, err)
		return 1
	}
	if ce != nil {
		fmt.Fprintf(stderr, "error: %s\n", ce.Code)
		fmt.Fprintf(stderr, "detail: %s\n", ce.Error())
		fmt.Fprintln(stderr, kindLine(ce.Kind))
		return 1
	}
	fmt.Fprintf(stderr, "dialogtrust %s: %v\n", c.name, err)
	return 1
}

// namedBy says which flag ("--key") or argument ("argument @FILE") of args names path,
// as a file or as @FILE; "" when none does. It reads args as package flag does: flags
// up to the first argument that is not one (or "--"); a boolean flag (bools) takes no
// separate value.
func namedBy(args []string, bools map[string]bool, path string) string {
	if path == "" {
		return ""
	}
	names := func(v string) bool { return v == path || v == "@"+path }
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			if a == "--" {
				i++
			}
			for _, rest := range args[i:] {
				if names(rest) {
					return "argument " + rest
				}
			}
			return ""
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && !bools[name] && i+1 < len(args) {
			i++
			value = args[i]
		}
		if names(value) {
			return "--" + name
		}
	}
	return ""
}

// boolFlags holds, per command, the names of its boolean flags (recorded by parse), so
// that report can read the command line as package flag did.
var boolFlags sync.Map // command name -> map[string]bool

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // the help is report's, on stdout (help.go)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	bools := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			bools[f.Name] = true
		}
	})
	boolFlags.Store(fs.Name(), bools)
	// Package flag would print its own message too; report says it once, as a usage
	// error. The output stays stderr for what the command prints later (bench progress).
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpRequest{fs}
		}
		return usageError{dashDash.Replace(err.Error())}
	}
	return nil
}

// dashDash spells the flags in package flag's messages as the help and the docs do,
// with two dashes.
var dashDash = strings.NewReplacer("defined: -", "defined: --", "flag -", "flag --", "for -", "for --", "argument: -", "argument: --")

func required(vals map[string]string) error {
	for name, v := range vals {
		if v == "" {
			return usageError{"--" + name + " is required"}
		}
	}
	return nil
}

// baseURL checks that the value of --name is an absolute http(s) URL with a host, before
// anything is asked of the server it names: a mistake in it is a usage error.
func baseURL(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{fmt.Sprintf("--%s: %q is not an absolute http(s) URL", name, errcode.Cut(v))}
	}
	return nil
}

// readValue returns s itself, or the contents of a file for "@path", or stdin for "-".
func readValue(s string, stdin io.Reader) (string, error) {
	switch {
	case s == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		return strings.TrimSpace(string(b)), err
	case strings.HasPrefix(s, "@"):
		b, err := os.ReadFile(s[1:])
		return strings.TrimSpace(string(b)), err
	}
	return s, nil
}
