// Command dialogtrust is the command line for operators and agents: keys, WITs, WPTs,
// HTTP signatures, and the conformance runner. Later issues add more subcommands.
//
// Exit status: 0 on success; 1 when a credential or message is rejected (stderr then
// says "error: <code>"); 2 on a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

type command struct {
	name, usage string
	run         func(args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands = []command{
	{"key generate", "--alg ES256|EdDSA|Ed25519 [--out FILE]", keyGenerate},
	{"key public", "[--in FILE]", keyPublic},
	{"wit issue", "--issuer-key FILE --iss URI --sub ID --cnf-key FILE [--ttl 1h]", witIssue},
	{"wit verify", "--trust JWKS_FILE|URL [--iss URI] [--now UNIX] [TOKEN|-]", witVerify},
	{"wit request", "--issuer URL [--svid CERT --svid-key KEY --bundle PEM [--server-id ID] | --assertion-key FILE --workload ID | --workload ID] [--sub ID] [--alg ES256] [--ttl D] [--key-out FILE]", witRequest},
	{"wpt new", "--key FILE --wit WIT --aud URL [--txn-token T] [--dialog-context V] [--ttl 60s]", wptNew},
	{"wpt verify", "--trust JWKS_FILE --wit WIT --aud URL [--txn-token T] [--dialog-context V] [--now UNIX] PROOF", wptVerify},
	{"httpsig sign", "--key FILE --wit WIT --aud URL [--sign-response] < raw HTTP/1.1 request", httpsigSign},
	{"httpsig verify", "--trust JWKS_FILE --aud URL [--now UNIX] < raw HTTP/1.1 request", httpsigVerify},
	{"handoff offer", "--key FILE [--form jws|cose] [--prev-handoff FILE [--no-chain]] [--ttl 120s] [--now UNIX] [OFFER_JSON|@FILE|-]", handoffOffer},
	{"handoff verify", "--trust FILE --self AGENTID [--dialog D] [--now UNIX] [--require-full-chain] [--trusted-origin ID]... [--allow-reentry ID]... [--max-chain 16] [--credential C] [HANDOFF|-]", handoffVerify},
	{"handoff status verify", "--trust FILE --offer HANDOFF [--self AGENTID] [STATUS|-]", handoffStatusVerify},
	{"handoff status", "--key FILE --offer HANDOFF --state STATE [--reason R] [--detail D] [--ref FILE]... [--now UNIX]", handoffStatus},
	{"handoff digest", "[--raw] [SIGNED|HANDOFF|@FILE|-]", handoffDigest},
	{"txn request", "--tts URL --wit WIT --key FILE (--subject-token T --subject-token-type URI | --self-signed SUB) --scope S --audience TD [--dialog D] [--details JSON] [--context JSON] [--proof wpt|httpsig]", txnRequest},
	{"txn verify", "--jwks URL|FILE --audience TD [--dialog D] [--dialog-context V] [--iss URI] [--now UNIX] TOKEN", txnVerify},
	{"conformance", "[--dir DIR] (default: the wimsey vectors built in)", conformanceRun},
	{"demo", "[--local ENVFILE | --local-env] (runs dialog-binding Figure 5 in process, or against the services of deploy/local/up.sh, and prints every check)", demoRun},
	{"bench verify", "[--url URL (--wit-issuer URL | --wit WIT --key FILE)] [--wit-issuer URL [--trust JWKS]] [--tts URL] [--proof httpsig|wpt] [--alg ES256|EdDSA] [--stateful] [--concurrency 16] [--duration 10s] [--rate R] [--server-pid PID] [--json]", benchVerify},
	{"bench receiver", "--trust JWKS_URL|FILE [--listen 127.0.0.1:8090] [--path /invoke] [--trust-domain dev.local] [--tts-jwks URL|FILE] [--stateful] [--for D]", benchReceiver},
	{"bench tts", "--url URL (--wit-issuer URL [--workloads N] [--alg ES256|EdDSA] | --wit WIT --key FILE) [--proof wpt|httpsig] [--concurrency 16] [--duration 10s] [--warmup 2s] [--fresh-subject] [--server-pid PID] [--metrics URL] [--json]", benchTTS},
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
	for _, c := range commands {
		words := strings.Fields(c.name)
		// "key generate" is two words on a shell command line and one in tests.
		if len(args) >= 1 && args[0] == c.name {
			return report(c.run(args[1:], stdin, stdout, stderr), c, stderr)
		}
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return report(c.run(args[len(words):], stdin, stdout, stderr), c, stderr)
		}
	}
	fmt.Fprintln(stderr, "usage: dialogtrust <command> [flags]")
	for _, c := range commands {
		fmt.Fprintf(stderr, "  dialogtrust %s %s\n", c.name, c.usage)
	}
	return 2
}

func report(err error, c command, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage error:", err)
		}
		fmt.Fprintf(stderr, "usage: dialogtrust %s %s\n", c.name, c.usage)
		return 2
	}
	var sf silentFailure
	if errors.As(err, &sf) {
		return 1
	}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		fmt.Fprintf(stderr, "error: %s\n", ce.Code)
		fmt.Fprintf(stderr, "detail: %s\n", ce.Error())
		return 1
	}
	fmt.Fprintf(stderr, "error: %s\n", errcode.Unmapped)
	fmt.Fprintf(stderr, "detail: %v\n", err)
	return 1
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}

func required(vals map[string]string) error {
	for name, v := range vals {
		if v == "" {
			return usageError{"--" + name + " is required"}
		}
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
