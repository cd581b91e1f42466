package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The workload's flags (--wit, --key, --proof, --timeout) of txn request, chain grant
// and chain redeem: the same help text in each, the default proof method first in its
// help and in its usage error, and the same usage errors (exit 2), checked in the same
// order, before any server is asked (nothing listens on port 1).
func TestWorkloadFlagsHelpAndUsageErrors(t *testing.T) {
	e := setup(t, "ES256")
	missing := filepath.Join(t.TempDir(), "missing")
	const as = "http://127.0.0.1:1"
	commands := []struct {
		name, choices, proofDefault string
		args                        func(wit, key string) []string
	}{
		{"txn request", "wpt or httpsig", "wpt", func(wit, key string) []string {
			return []string{"txn request", "--tts", as, "--wit", wit, "--key", key, "--self-signed", "a", "--scope", "s", "--audience", "d"}
		}},
		{"chain grant", "httpsig or wpt", "httpsig", func(wit, key string) []string {
			return []string{"chain grant", "--tts", as, "--wit", wit, "--key", key, "--txn-token", "T", "--audience", as}
		}},
		{"chain redeem", "httpsig or wpt", "httpsig", func(wit, key string) []string {
			return []string{"chain redeem", "--token-endpoint", as + "/token", "--wit", wit, "--key", key, "--grant", "G"}
		}},
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			help, _, code := dt(t, "", c.name, "-h")
			for _, want := range []string{
				"  --wit string\n        the WIT (value, @file or -)\n",
				"  --key string\n        the workload's private JWK file (the WIT's key)\n",
				"  --proof string\n        proof of possession: " + c.choices + " (default " + c.proofDefault + ")\n",
				"  --timeout duration\n        time allowed for the whole exchange (default 30s)\n",
			} {
				if code != 0 || !strings.Contains(help, want) {
					t.Errorf("-h: exit %d, %q lacks %q", code, help, want)
				}
			}
			for _, u := range []struct {
				name string
				args []string
				want string
			}{
				{"not a proof method", append(c.args(e.wit, e.workload), "--proof", "bogus"), `usage error: --proof: "bogus" is not a proof method (` + c.choices + ")\n"},
				{"the proof checked before the arguments", append(c.args(e.wit, e.workload), "--proof", "bogus", "extra"), "usage error: --proof: "},
				{"an argument", append(c.args(e.wit, e.workload), "extra"), "usage error: unexpected argument extra\n"},
				{"the arguments checked before the key", append(c.args(e.wit, missing), "extra"), "usage error: unexpected argument extra\n"},
				{"no key file", c.args(e.wit, missing), "usage error: --key: "},
				{"the key read before the WIT", c.args("@"+missing+".wit", missing), "usage error: --key: "},
				{"no WIT file", c.args("@"+missing, e.workload), "usage error: --wit: "},
				{"not a duration", append(c.args(e.wit, e.workload), "--timeout", "soon"), `usage error: invalid value "soon" for flag --timeout`},
			} {
				out, errOut, code := dt(t, "", u.args...)
				if code != 2 || out != "" || !strings.Contains(errOut, u.want) || !strings.Contains(errOut, "usage: dialogtrust "+c.name+" ") {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and %q", u.name, code, out, errOut, u.want)
				}
			}
			// An empty --proof is the default method: the command goes on to the server.
			_, errOut, code := dt(t, "", append(c.args(e.wit, e.workload), "--proof=", "--timeout", "5s")...)
			if code != 1 || strings.Contains(errOut, "usage") {
				t.Errorf("--proof=: exit %d, stderr %q; want exit 1 (the server does not answer)", code, errOut)
			}
		})
	}
}
