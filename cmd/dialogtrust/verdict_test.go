package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// verifiedClaims is the claims of wit verify's or txn verify's output, after its one
// verdict line.
func verifiedClaims(t *testing.T, out string) []byte {
	t.Helper()
	line, claims, ok := strings.Cut(out, "\n")
	if !ok || !strings.HasPrefix(line, "verified ") || strings.Count(claims, "\n") != 1 {
		t.Fatalf("not a verdict line and the claims: %q", out)
	}
	return []byte(claims)
}

// kidOf is the kid of the one key of a JWKS file.
func kidOf(t *testing.T, file string) string {
	t.Helper()
	set, err := keys.LoadJWKSFile(file)
	if err != nil || len(set.Keys()) != 1 {
		t.Fatalf("%s: %v", file, err)
	}
	return set.Keys()[0].KID()
}

// TestIssue24Point5WITVerdict: wit verify prints first one line naming what was
// verified (a WIT, its subject and issuer), against which keys (the JWKS and the kid)
// and until when, then the claims; --json one object with the same and the claims; a
// refusal its code and whether the check failed or could not be completed, as JSON
// too with --json, exit status 1.
func TestIssue24Point5WITVerdict(t *testing.T) {
	e := setup(t, "EdDSA")
	kid := kidOf(t, e.trust)
	out := mustRun(t, "", "wit verify", "--trust", e.trust, e.wit)
	line, _, _ := strings.Cut(out, "\n")
	var claims struct{ Exp int64 }
	if err := json.Unmarshal(verifiedClaims(t, out), &claims); err != nil {
		t.Fatal(err)
	}
	exp := time.Unix(claims.Exp, 0).UTC().Format(time.RFC3339)
	want := fmt.Sprintf(`verified WIT of wimse://a.example/agent/a1, issued by https://a.example, signed by key %q of the JWKS %s; expires %s`, kid, e.trust, exp)
	if line != want {
		t.Errorf("verdict line\n got %s\nwant %s", line, want)
	}

	out = mustRun(t, "", "wit verify", "--json", "--trust", e.trust, e.wit)
	var v struct {
		Verified bool
		Token    string
		Keys     struct{ JWKS, KID string }
		Subject  string
		Issuer   string
		Expires  string
		Claims   struct{ Sub string }
	}
	if strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &v) != nil || !v.Verified || v.Token != "WIT" || v.Keys.JWKS != e.trust ||
		v.Keys.KID != kid || v.Subject != "wimse://a.example/agent/a1" || v.Issuer != "https://a.example" || v.Expires != exp ||
		v.Claims.Sub != "wimse://a.example/agent/a1" {
		t.Errorf("--json: %s", out)
	}

	// Refused: the check failed (expired), or could not be completed (no JWKS).
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, c := range []struct {
		args       []string
		code, kind string
	}{
		{[]string{"--trust", e.trust, "--now", "9999999999"}, "expired", "failed"},
		{[]string{"--trust", down.URL + "/jwks"}, "keys_unavailable", "could_not_complete"},
	} {
		out, errOut, code := dt(t, "", append(append([]string{"wit verify"}, c.args...), e.wit)...)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, "error: "+c.code+"\n") || !strings.Contains(errOut, "\nkind: "+c.kind+" (") {
			t.Errorf("%v: exit %d, stdout %q, stderr %s", c.args, code, out, errOut)
		}
		out, _, code = dt(t, "", append(append([]string{"wit verify", "--json"}, c.args...), e.wit)...)
		var r struct {
			Verified           *bool
			Code, Kind, Detail string
			Claims             any
		}
		if code != 1 || json.Unmarshal([]byte(out), &r) != nil || r.Verified == nil || *r.Verified || r.Code != c.code || r.Kind != c.kind ||
			!strings.HasPrefix(r.Detail, c.code+": ") || r.Claims != nil {
			t.Errorf("%v --json: exit %d, %s", c.args, code, out)
		}
	}
}

// TestIssue24Point5TxnVerdict: txn verify's verdict line names the dialog (tctx.dlg)
// and whether it was checked, the audience, the subject and requester, the keys (JWKS
// and kid) and the expiry; --json the same with the claims; a refusal its code and
// kind.
func TestIssue24Point5TxnVerdict(t *testing.T) {
	e := newTxnEnv(t)
	jwks := e.url + tts.PathJWKS
	tok := strings.TrimSpace(mustRun(t, "", "txn request", "--tts", e.url, "--wit", e.wit, "--key", e.keyFile,
		"--self-signed", "alice", "--scope", "trip.read", "--audience", "a.example", "--dialog", "D1"))
	res, err := http.Get(jwks)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	jwksFile := filepath.Join(t.TempDir(), "tts.json")
	var raw json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&raw); err != nil || os.WriteFile(jwksFile, raw, 0o600) != nil {
		t.Fatal(err)
	}
	kid := kidOf(t, jwksFile)

	out := mustRun(t, "", "txn verify", "--jwks", jwks, "--audience", "a.example", "--dialog", "D1", tok)
	var c txntoken.Claims
	if err := json.Unmarshal(verifiedClaims(t, out), &c); err != nil {
		t.Fatal(err)
	}
	exp := time.Unix(int64(*c.Exp), 0).UTC().Format(time.RFC3339)
	line, _, _ := strings.Cut(out, "\n")
	want := fmt.Sprintf("verified Txn-Token for dialog D1 (tctx.dlg checked), audience a.example, subject alice, requested by wimse://a.example/agent/a1, issued by %s, signed by key %q of the JWKS %s; expires %s",
		e.url, kid, jwks, exp)
	if line != want {
		t.Errorf("verdict line\n got %s\nwant %s", line, want)
	}
	out = mustRun(t, "", "txn verify", "--jwks", jwksFile, "--audience", "a.example", tok)
	if line, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(line, "verified Txn-Token for dialog D1 (tctx.dlg, not checked: no --dialog), ") {
		t.Errorf("without --dialog: %s", line)
	}

	out = mustRun(t, "", "txn verify", "--json", "--jwks", jwksFile, "--audience", "a.example", "--dialog", "D1", tok)
	var v struct {
		Verified        bool
		Token, Audience string
		Keys            struct{ JWKS, KID string }
		Subject         string
		RequestedBy     string `json:"requested_by"`
		Dialog          string
		DialogChecked   bool `json:"dialog_checked"`
		Expires         string
		Claims          txntoken.Claims
	}
	if strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &v) != nil || !v.Verified || v.Token != "Txn-Token" || v.Audience != "a.example" ||
		v.Keys.JWKS != jwksFile || v.Keys.KID != kid || v.Dialog != "D1" || !v.DialogChecked || v.Expires != exp ||
		v.RequestedBy != "wimse://a.example/agent/a1" || v.Claims.Dialog() != "D1" || v.Claims.Sub != "alice" {
		t.Errorf("--json: %s", out)
	}

	// Refused: another dialog (the check failed).
	out, errOut, code := dt(t, "", "txn verify", "--jwks", jwksFile, "--audience", "a.example", "--dialog", "D2", tok)
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "error: dialog_mismatch\n") || !strings.Contains(errOut, "\nkind: failed (") {
		t.Errorf("D2: exit %d, %q %s", code, out, errOut)
	}
	out, _, code = dt(t, "", "txn verify", "--json", "--jwks", jwksFile, "--audience", "a.example", "--dialog", "D2", tok)
	var r struct {
		Verified   *bool
		Code, Kind string
	}
	if code != 1 || json.Unmarshal([]byte(out), &r) != nil || r.Verified == nil || *r.Verified || r.Code != "dialog_mismatch" || r.Kind != "failed" {
		t.Errorf("D2 --json: exit %d, %s", code, out)
	}
}
