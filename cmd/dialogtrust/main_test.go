package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dt runs the command line in-process and returns stdout, stderr and the exit status.
func dt(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := dt(t, stdin, args...)
	if code != 0 {
		t.Fatalf("dialogtrust %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

type env struct {
	dir, issuer, workload, trust, wit string
}

func setup(t *testing.T, alg string) env {
	d := t.TempDir()
	e := env{dir: d, issuer: filepath.Join(d, "issuer.jwk"), workload: filepath.Join(d, "workload.jwk"), trust: filepath.Join(d, "trust.json")}
	mustRun(t, "", "key generate", "--alg", "ES256", "--out", e.issuer)
	mustRun(t, "", "key generate", "--alg", alg, "--out", e.workload)
	pub := mustRun(t, "", "key public", "--in", e.issuer)
	if strings.Contains(pub, `"d"`) {
		t.Fatal("key public printed the private key")
	}
	if err := os.WriteFile(e.trust, []byte(`{"keys":[`+strings.TrimSpace(pub)+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.wit = strings.TrimSpace(mustRun(t, "", "wit issue", "--issuer-key", e.issuer, "--iss", "https://a.example",
		"--sub", "wimse://a.example/agent/a1", "--cnf-key", e.workload, "--ttl", "1h"))
	return e
}

func TestWITIssueVerify(t *testing.T) {
	e := setup(t, "EdDSA")
	out := mustRun(t, "", "wit verify", "--trust", e.trust, "--iss", "https://a.example", e.wit)
	var claims map[string]any
	if err := json.Unmarshal(verifiedClaims(t, out), &claims); err != nil || claims["sub"] != "wimse://a.example/agent/a1" {
		t.Fatalf("claims %q: %v", out, err)
	}
	mustRun(t, e.wit, "wit verify", "--trust", e.trust, "-")

	_, errOut, code := dt(t, "", "wit verify", "--trust", e.trust, "--now", "9999999999", e.wit)
	if code != 1 || !strings.HasPrefix(errOut, "error: expired\n") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = dt(t, "", "wit verify", "--trust", e.trust, "--iss", "https://b.example", e.wit)
	if code != 1 || !strings.HasPrefix(errOut, "error: issuer_mismatch\n") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// A trust file holding another key.
	other := filepath.Join(e.dir, "other.jwk")
	mustRun(t, "", "key generate", "--alg", "ES256", "--out", other)
	otherTrust := filepath.Join(e.dir, "other.json")
	os.WriteFile(otherTrust, []byte(`{"keys":[`+strings.TrimSpace(mustRun(t, "", "key public", "--in", other))+`]}`), 0o600)
	_, errOut, code = dt(t, "", "wit verify", "--trust", otherTrust, e.wit)
	if code != 1 || !strings.HasPrefix(errOut, "error: unknown_key\n") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if _, _, code := dt(t, "", "wit issue"); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
}

func TestWPTNewVerify(t *testing.T) {
	e := setup(t, "ES256")
	dc := `dlg="D1", initiator="wimse://a.example/agent/a1"`
	proof := strings.TrimSpace(mustRun(t, "", "wpt new", "--key", e.workload, "--wit", e.wit, "--aud", "https://b.example/x",
		"--txn-token", "t.x.n", "--dialog-context", dc))
	mustRun(t, "", "wpt verify", "--trust", e.trust, "--wit", e.wit, "--aud", "https://b.example/x", "--txn-token", "t.x.n", "--dialog-context", dc, proof)
	for _, c := range []struct {
		args []string
		code string
	}{
		{[]string{"--txn-token", "t.x.n"}, "dialog_context_binding_mismatch"},
		{[]string{"--txn-token", "other", "--dialog-context", dc}, "txn_token_binding_mismatch"},
		{[]string{"--dialog-context", dc}, "txn_token_binding_mismatch"},
	} {
		args := append([]string{"wpt verify", "--trust", e.trust, "--wit", e.wit, "--aud", "https://b.example/x"}, c.args...)
		_, errOut, code := dt(t, "", append(args, proof)...)
		if code != 1 || !strings.HasPrefix(errOut, "error: "+c.code+"\n") {
			t.Fatalf("%v: exit %d, stderr %q", c.args, code, errOut)
		}
	}
	_, errOut, code := dt(t, "", "wpt verify", "--trust", e.trust, "--wit", e.wit, "--aud", "https://c.example/x", "--txn-token", "t.x.n", "--dialog-context", dc, proof)
	if code != 1 || !strings.HasPrefix(errOut, "error: audience_mismatch\n") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestHTTPSigSignVerify(t *testing.T) {
	e := setup(t, "EdDSA")
	raw := "POST /invoke?x=1 HTTP/1.1\r\nHost: tool.a.example\r\nContent-Type: application/json\r\n" +
		"Dialog-Context: dlg=\"D1\", initiator=\"wimse://a.example/agent/a1\"\r\nTxn-Token: t.x.n\r\nContent-Length: 13\r\n\r\n{\"amount\":10}"
	signed := mustRun(t, raw, "httpsig sign", "--key", e.workload, "--wit", e.wit, "--aud", "https://tool.a.example/invoke", "--sign-response")
	for _, want := range []string{"Signature-Input: wimse=(\"@method\" \"@path\" \"@query\"", "\"dialog-context\"", "\"txn-token\"", "Content-Digest: sha-256=", ";wimse-sign-response"} {
		if !strings.Contains(signed, want) {
			t.Fatalf("signed request lacks %q:\n%s", want, signed)
		}
	}
	out := mustRun(t, signed, "httpsig verify", "--trust", e.trust, "--aud", "https://tool.a.example/invoke")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["sub"] != "wimse://a.example/agent/a1" || res["sign_response"] != true {
		t.Fatalf("%s: %v", out, err)
	}
	for name, c := range map[string]struct {
		req, code string
	}{
		"body swapped":     {strings.Replace(signed, `{"amount":10}`, `{"amount":99}`, 1), "content_digest_mismatch"},
		"dialog changed":   {strings.Replace(signed, `dlg="D1"`, `dlg="D2"`, 1), "invalid_signature"},
		"path changed":     {strings.Replace(signed, "POST /invoke", "POST /admin", 1), "invalid_signature"},
		"wrong audience":   {strings.Replace(signed, "wimse-aud=\"https://tool.a.example/invoke\"", "wimse-aud=\"https://other.example/\"", 1), "audience_mismatch"},
		"signature absent": {raw, "missing_credential"},
	} {
		_, errOut, code := dt(t, c.req, "httpsig verify", "--trust", e.trust, "--aud", "https://tool.a.example/invoke")
		if code != 1 || !strings.HasPrefix(errOut, "error: "+c.code+"\n") {
			t.Errorf("%s: exit %d, stderr %q", name, code, errOut)
		}
	}
}

func TestConformanceCommand(t *testing.T) {
	// The same set twice: built in (run from another directory, so that nothing is read
	// relative to the working directory), and from the repository's copy with --dir.
	dir, _ := filepath.Abs("internal/conformance/testdata/wimsey")
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"conformance"}, {"conformance", "--dir", dir}} {
		out, errOut, code := dt(t, "", args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := lines[len(lines)-1]
		if code != 0 || !strings.HasSuffix(last, " passed, 0 failed") || len(lines) < 100 {
			t.Fatalf("%v: exit %d, last line %q, stderr %q", args, code, last, errOut)
		}
	}
}

// conformance says on stderr which vector file it runs, and stdout stays the report.
func TestConformanceProgress(t *testing.T) {
	out, errOut, code := dt(t, "", "conformance")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != 0 || len(lines) < 2 || !strings.HasPrefix(lines[0], "conformance: [1/") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	n := len(lines)
	if last := lines[n-1]; !strings.HasPrefix(last, fmt.Sprintf("conformance: [%d/%d] ", n, n)) {
		t.Fatalf("last progress line %q of %d", last, n)
	}
	if strings.Contains(out, "conformance: [") {
		t.Fatal("progress on stdout")
	}
}

func TestDemoCommand(t *testing.T) {
	out, errOut, code := dt(t, "", "demo")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), " passed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestUsageErrors: a file that the command line names and that cannot be read or
// written, or a bad flag value, is a usage error (exit 2) naming the flag or argument;
// no error reaches the user as "unmapped".
func TestUsageErrors(t *testing.T) {
	e := setup(t, "ES256")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"conformance", "--dir", missing}, 2, "usage error: --dir: "},
		{[]string{"conformance", "--dir", e.issuer}, 2, "usage error: --dir: "},
		{[]string{"conformance", "--dir", e.dir}, 2, "usage error: --dir " + e.dir + ": "},
		{[]string{"key public", "--in", missing}, 2, "usage error: --in: "},
		{[]string{"key generate", "--alg", "ES256", "--out", filepath.Join(missing, "k.jwk")}, 2, "usage error: --out: "},
		{[]string{"wit issue", "--issuer-key", missing, "--iss", "https://a.example", "--sub", "wimse://a.example/w", "--cnf-key", e.workload}, 2, "usage error: --issuer-key: "},
		{[]string{"wit issue", "--issuer-key", e.issuer, "--iss", "https://a.example", "--sub", "wimse://a.example/w", "--cnf-key=" + missing}, 2, "usage error: --cnf-key: "},
		{[]string{"wit issue", "--issuer-key", e.issuer, "--iss", "https://a.example", "--sub", "wimse://a.example/w", "--cnf-key", e.workload, "--ttl", "soon"}, 2, "-ttl"},
		{[]string{"wit verify", "--trust", e.trust, "@" + missing}, 2, "usage error: argument @" + missing + ": "},
		{[]string{"wpt new", "--key", e.workload, "--wit", "@" + missing, "--aud", "https://b.example/"}, 2, "usage error: --wit: "},
		{[]string{"httpsig sign", "--key", missing, "--wit", e.wit, "--aud", "https://b.example/"}, 2, "usage error: --key: "},
		{[]string{"handoff offer", "--key", e.workload, "@" + missing}, 2, "usage error: argument @" + missing + ": "},
		// A boolean flag takes no value: the file is the argument after it.
		{[]string{"handoff verify", "--trust", e.trust, "--self", "wimse://a.example/w", "--require-full-chain", "@" + missing}, 2, "usage error: argument @" + missing + ": "},
		{[]string{"handoff digest", "@" + missing}, 2, "usage error: argument @" + missing + ": "},
		{[]string{"demo", "--local", missing}, 2, "usage error: --local: "},
		// A server's URL or a method that cannot be right is refused before anything
		// is asked of the network (nothing listens on port 1).
		{[]string{"wit request", "--issuer", "not-a-url", "--workload", "wimse://dev.local/a"}, 2, `usage error: --issuer: "not-a-url" is not an absolute http(s) URL`},
		{[]string{"txn request", "--tts", "ftp://127.0.0.1:1", "--wit", e.wit, "--key", e.workload, "--self-signed", "a", "--scope", "s", "--audience", "d"}, 2, "usage error: --tts: "},
		{[]string{"txn request", "--tts", "http://127.0.0.1:1", "--wit", e.wit, "--key", e.workload, "--self-signed", "a", "--scope", "s", "--audience", "d", "--proof", "bogus"}, 2, `usage error: --proof: "bogus" is not a proof method`},
		// Issue 24 point 2: a file named on the command line that cannot be read is a
		// usage error, also where the reading code gives it an error code
		// (keys_unavailable); so is an algorithm no key can be made for.
		{[]string{"wit verify", "--trust", missing, e.wit}, 2, "usage error: --trust: "},
		{[]string{"key generate", "--alg", "RS1"}, 2, `usage error: --alg: "RS1" is not an algorithm`},
		// Known before the issuer is asked (nothing listens on port 1).
		{[]string{"wit request", "--issuer", "http://127.0.0.1:1", "--workload", "wimse://dev.local/a", "--alg", "RS1", "--key-out", filepath.Join(e.dir, "x.jwk")}, 2, `usage error: --alg: "RS1" is not an algorithm`},
	} {
		_, errOut, code := dt(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "unmapped") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// TestReportUncoded: an error without a code is printed as itself, never as "unmapped".
func TestReportUncoded(t *testing.T) {
	var errb bytes.Buffer
	code := report(errors.New("disk full"), command{name: "key generate"}, nil, io.Discard, &errb)
	if code != 1 || errb.String() != "dialogtrust key generate: disk full\n" {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// key generate --out --force writes the private key with mode 0600, also over a file
// that had a wider mode, and nowhere else.
func TestKeyGenerateOutMode(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.jwk")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "key generate", "--alg", "ES256", "--out", out, "--force")
	st, err := os.Stat(out)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("files left: %v", ents)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), `"d"`) {
		t.Fatalf("not a private JWK: %s", b)
	}
}
