package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChainUsageErrors: chain grant and chain redeem refuse a missing or malformed flag,
// a file they cannot read and an extra argument with exit 2 and a message naming the
// flag, before asking any server.
func TestChainUsageErrors(t *testing.T) {
	e := setup(t, "ES256")
	missing := filepath.Join(t.TempDir(), "missing")
	const as = "http://127.0.0.1:1"
	grant := func(extra ...string) []string {
		return append([]string{"chain grant", "--tts", as, "--wit", e.wit, "--key", e.workload, "--txn-token", "T", "--audience", as}, extra...)
	}
	redeem := func(extra ...string) []string {
		return append([]string{"chain redeem", "--token-endpoint", as + "/token", "--wit", e.wit, "--key", e.workload, "--grant", "G"}, extra...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"chain grant"}, "usage error: --tts is required"},
		{[]string{"chain grant", "--tts", as}, "usage error: --wit is required"},
		{[]string{"chain grant", "--tts", as, "--wit", e.wit}, "usage error: --key is required"},
		{[]string{"chain grant", "--tts", as, "--wit", e.wit, "--key", e.workload}, "usage error: --txn-token is required"},
		{[]string{"chain grant", "--tts", as, "--wit", e.wit, "--key", e.workload, "--txn-token", "T"}, "usage error: --audience is required"},
		{[]string{"chain grant", "--tts", "ftp://127.0.0.1:1", "--wit", e.wit, "--key", e.workload, "--txn-token", "T", "--audience", as}, `usage error: --tts: "ftp://127.0.0.1:1" is not an absolute http(s) URL`},
		{grant("--proof", "bogus"), `usage error: --proof: "bogus" is not a proof method`},
		{grant("--nope"), "usage error: flag provided but not defined: --nope"},
		{grant("extra"), "usage error: unexpected argument extra"},
		{[]string{"chain grant", "--tts", as, "--wit", e.wit, "--key", missing, "--txn-token", "T", "--audience", as}, "usage error: --key: "},
		{[]string{"chain grant", "--tts", as, "--wit", "@" + missing, "--key", e.workload, "--txn-token", "T", "--audience", as}, "usage error: --wit: "},
		{[]string{"chain grant", "--tts", as, "--wit", e.wit, "--key", e.workload, "--txn-token", "@" + missing, "--audience", as}, "usage error: --txn-token: "},

		{[]string{"chain redeem"}, "usage error: --token-endpoint is required"},
		{[]string{"chain redeem", "--token-endpoint", as + "/token"}, "usage error: --wit is required"},
		{[]string{"chain redeem", "--token-endpoint", as + "/token", "--wit", e.wit}, "usage error: --key is required"},
		{[]string{"chain redeem", "--token-endpoint", as + "/token", "--wit", e.wit, "--key", e.workload}, "usage error: --grant is required"},
		{[]string{"chain redeem", "--token-endpoint", "/token", "--wit", e.wit, "--key", e.workload, "--grant", "G"}, `usage error: --token-endpoint: "/token" is not an absolute http(s) URL`},
		{redeem("--proof", "bogus"), `usage error: --proof: "bogus" is not a proof method`},
		{redeem("extra"), "usage error: unexpected argument extra"},
		{[]string{"chain redeem", "--token-endpoint", as + "/token", "--wit", e.wit, "--key", missing, "--grant", "G"}, "usage error: --key: "},
		{[]string{"chain redeem", "--token-endpoint", as + "/token", "--wit", e.wit, "--key", e.workload, "--grant", "@" + missing}, "usage error: --grant: "},
	} {
		out, errOut, code := dt(t, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
		if !strings.Contains(errOut, "usage: dialogtrust "+c.args[0]+" ") {
			t.Errorf("%v: no usage line in %q", c.args, errOut)
		}
	}
}

// TestChainUnreachable: an AS that does not answer is a rejection with its stable code
// (exit 1), not a usage error.
func TestChainUnreachable(t *testing.T) {
	e := setup(t, "ES256")
	const as = "http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"chain grant", "--tts", as, "--wit", e.wit, "--key", e.workload, "--txn-token", "T", "--audience", as, "--timeout", "5s"}, "error: tts_unavailable\n"},
		{[]string{"chain redeem", "--token-endpoint", as + "/token", "--wit", e.wit, "--key", e.workload, "--grant", "G", "--timeout", "5s"}, "error: as_unavailable\n"},
	} {
		_, errOut, code := dt(t, "", c.args...)
		if code != 1 || !strings.HasPrefix(errOut, c.want) || strings.Contains(errOut, "unmapped") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q", c.args, code, errOut, c.want)
		}
	}
}
