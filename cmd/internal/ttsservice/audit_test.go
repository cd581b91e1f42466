package ttsservice

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Issue 26, audit trail: two tts processes (run as main runs them) with an audit
// section each record every issuance and refusal of the TTS, AS A and AS B; each
// trail verifies against its TTS's JWKS (chain, checkpoints, signatures), names the
// tokens by SHA-256 only, and holds the txn, dialog and requester of each decision.
func TestIssue26AuditTrailOfTwoDomains(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	da, db := newWITDomain(t, "a.example"), newWITDomain(t, "b.example")
	addrA, addrB := freeLoopback(t), freeLoopback(t)
	urlA, urlB := "http://"+addrA, "http://"+addrB
	cfgA, cfgB := twoDomainConfigs(da, db, addrA, addrB)
	pathA, pathB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	section := func(path, writer string) string {
		return "audit:\n  sink: file\n  path: " + path + "\n  rotate_bytes: 200000\n  checkpoint_interval: 1s\n  writer: " + writer + "\n"
	}
	procB := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgB+section(pathB, "tts-b"))}, nil)
	procA := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgA+section(pathA, "tts-a"))}, nil)
	mdA, mdB := discoverTwoDomains(t, ctx, procA, procB)

	a2, a2Key, a2WIT := da.workload(t, "/agent/a2")
	ss, _ := txntoken.NewSelfSignedToken(a2Key, a2, "alice@a.example", urlA, "trip.read trip.book", 5*time.Minute, time.Now())
	txn, err := (&txntoken.Client{TokenEndpoint: mdA.TokenEndpoint, WIT: a2WIT, Key: a2Key, Proof: proof.WPT}).Request(ctx,
		txntoken.Request{Audience: "a.example", Scope: "trip.read trip.book", SubjectToken: ss, SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: "D1-audit"})
	if err != nil {
		t.Fatal(err)
	}
	g, at := chainToDomainB(t, ctx, &chaining.Client{WIT: a2WIT, Key: a2Key}, mdA, mdB, txn.AccessToken)
	txnInB(t, ctx, db, mdB, urlB, at.AccessToken)
	if _, err := (&txntoken.Client{TokenEndpoint: mdB.TokenEndpoint, WIT: a2WIT, Key: a2Key, Proof: proof.WPT}).Request(ctx,
		txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: at.AccessToken, SubjectTokenType: tts.TokenTypeAccessToken}); err == nil {
		t.Fatal("a domain-A workload got a domain-B Txn-Token")
	}
	jwksA, jwksB := fetchJWKS(t, ctx, mdA.JWKSURI), fetchJWKS(t, ctx, mdB.JWKSURI)
	for _, p := range []interface{ Stop() error }{procA, procB} {
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	recsA := verifyTrail(t, pathA, jwksA)
	recsB := verifyTrail(t, pathB, jwksB)
	tokens := []string{ss, txn.AccessToken, g.AccessToken, at.AccessToken}
	for _, p := range []string{pathA, pathB} {
		b, _ := os.ReadFile(p)
		for _, tok := range tokens {
			if strings.Contains(string(b), tok) {
				t.Fatalf("%s holds a whole token", p)
			}
		}
	}
	want := func(recs []audit.Entry, handler, decision string, check func(audit.Entry) bool) {
		t.Helper()
		for _, e := range recs {
			if e.Handler == handler && e.Decision == decision && check(e) {
				return
			}
		}
		t.Fatalf("no %s %s record as expected in %+v", handler, decision, recs)
	}
	want(recsA, tts.HandlerName, audit.Issued, func(e audit.Entry) bool {
		return e.IssuedSHA256 == tokenhash.Of(txn.AccessToken) && e.SubjectSHA256 == tokenhash.Of(ss) && e.Dialog == "D1-audit" &&
			e.Txn != "" && e.ReqWL == a2.String() && e.Requester == a2.String() && len(e.Scopes) == 2
	})
	want(recsA, chaining.HandlerNameGrants, audit.Issued, func(e audit.Entry) bool {
		return e.IssuedSHA256 == tokenhash.Of(g.AccessToken) && e.SubjectSHA256 == tokenhash.Of(txn.AccessToken) && e.Peer == urlB &&
			e.Dialog == "D1-audit" && e.Txn != "" && e.Txn == recsA[0].Txn
	})
	want(recsB, chaining.HandlerNameAccessTokens, audit.Issued, func(e audit.Entry) bool {
		return e.IssuedSHA256 == tokenhash.Of(at.AccessToken) && e.SubjectSHA256 == tokenhash.Of(g.AccessToken)
	})
	want(recsB, tts.HandlerName, audit.Issued, func(e audit.Entry) bool { return e.Dialog == "D2-cmd" })
	want(recsB, tts.HandlerName, audit.Refused, func(e audit.Entry) bool {
		return e.Code == string(errcode.WorkloadNotAllowed) && e.Requester == a2.String() && e.IssuedSHA256 == ""
	})
}

func fetchJWKS(t *testing.T, ctx context.Context, url string) []*keys.PublicKey {
	t.Helper()
	status, b := testkit.Get(t, url)
	if status != 200 {
		t.Fatalf("JWKS %s: %d", url, status)
	}
	set, err := keys.ParseJWKS(b)
	if err != nil {
		t.Fatal(err)
	}
	return set.Keys()
}

// verifyTrail verifies the trail at path (and its kept checkpoint) and returns its
// records.
func verifyTrail(t *testing.T, path string, ks []*keys.PublicKey) []audit.Entry {
	t.Helper()
	vs, err := audit.Verifiers(ks)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	cp, err := os.Open(path + audit.CheckpointSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	rep, err := audit.Verify([]audit.Input{{Name: path, R: f}}, []audit.Input{{Name: "checkpoint", R: cp}}, vs)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Records == 0 || rep.CheckpointsVerified == 0 || !rep.SignaturesChecked {
		t.Fatalf("%s: %+v", path, rep)
	}
	b, _ := os.ReadFile(path)
	var out []audit.Entry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err == nil && e.Seq > 0 {
			out = append(out, e)
		}
	}
	return out
}

// Issue 26, "no data lost": a TTS whose audit file cannot be written (here /dev/full)
// refuses to issue with audit_unavailable (503) and sends no token.
func TestIssue26AuditFailureRefusesIssuance(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	ctx := context.Background()
	da := newWITDomain(t, "a.example")
	addr := freeLoopback(t)
	cfg := domainAYAML(da, addr) + `audit:
  sink: file
  path: /dev/full
`
	proc := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfg)}, nil)
	a2, a2Key, a2WIT := da.workload(t, "/agent/a2")
	_, err := selfSignedTxn(ctx, a2, a2Key, a2WIT, "http://"+addr, proc.URL+tts.PathToken, "trip.read", "")
	if errcode.CodeOf(err) != errcode.AuditUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("issued without an audit record, or refused otherwise: %v", err)
	}
	if !strings.Contains(proc.Stderr.String(), "audit record not written") {
		t.Fatalf("the failure is not logged: %s", proc.Stderr.String())
	}
}

// The audit section is checked before anything opens (also by --check-config).
func TestIssue26AuditSectionChecked(t *testing.T) {
	if err := checkConfig(t, chainingBaseYAML+"audit:\n  sink: file\n  path: /var/lib/dialogtrust/audit.log\n"); err != nil {
		t.Fatal(err)
	}
	for yaml, want := range map[string]string{
		"audit:\n  sink: file\n":                        "audit.path is required",
		"audit:\n  sink: syslog\n":                      "audit.sink must be file, stdout or redis",
		"audit:\n  sink: redis\n":                       "needs store.type redis",
		"audit:\n  sink: stdout\n  rotate_bytes: 10\n":  "are for sink file",
		"audit:\n  sink: stdout\n  unknown_member: 1\n": "unknown_member",
	} {
		if err := checkConfig(t, chainingBaseYAML+yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}
