package proxyservice

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/internal/testkit/audittest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
)

// Issue 26 (auditing at ingresses), configured as main runs it (ingress.audit, file
// sink, checkpoints signed with key_file's key): a request through the egress and
// ingress is one "accepted" record of handler "ingress" naming the sender, the
// ingress's workload as audience, the dialog and the Txn-Token's txn; a request
// without a proof is a "refused" record naming no one. The trail verifies with the
// key's public half, and the application saw only the accepted request.
func TestIssue26_ProxyIngressAudit(t *testing.T) {
	dir := t.TempDir()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := k.MarshalJSON()
	keyFile := filepath.Join(dir, "audit.jwk")
	if err := os.WriteFile(keyFile, kb, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "ingress-audit.log")
	var calls atomic.Int32
	var dlg string
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, "done")
	}))
	defer app.Close()
	t.Run("serve", func(t *testing.T) {
		witURL, ttsURL := proxyDomain(t)
		y := strings.Replace(ingressYAML(witURL, ttsURL, app.URL), "  sign_responses: true\n",
			"  sign_responses: true\n  audit: {sink: file, path: "+logPath+", writer: ingress-t1, key_file: "+keyFile+"}\n", 1)
		in := startProxy(t, y)
		out := startProxy(t, egressYAML(witURL, ttsURL, in["ingress"]+"/invoke"))
		dc := mustBookThrough(t, http.DefaultClient, out["egress"]+"/t1")
		dlg = dc.DLG()
		res, body := testkit.Do(t, http.DefaultClient, func() *http.Request {
			req, _ := http.NewRequest("POST", in["ingress"]+"/invoke", strings.NewReader(`{}`))
			req.Header.Set("Dialog-Context", dc.Value())
			return req
		}())
		if c := errcode.CodeOf(problem.Read(res.StatusCode, body)); c != errcode.MissingCredential {
			t.Fatalf("unauthenticated: %d %s", res.StatusCode, body)
		}
	})
	recs := audittest.VerifiedFile(t, logPath, k)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	acc, ref := recs[0], recs[1]
	if acc.Decision != audit.Accepted || acc.Handler != audit.HandlerIngress || acc.Requester != "wimse://a.example/agent/a1" ||
		len(acc.Audience) != 1 || acc.Audience[0] != "wimse://a.example/tool/t1" || acc.Dialog != dlg || acc.Txn == "" ||
		acc.SubjectSHA256 == "" || acc.RequestID == "" {
		t.Fatalf("accepted record %+v", acc)
	}
	if ref.Decision != audit.Refused || ref.Handler != audit.HandlerIngress || ref.Code != string(errcode.MissingCredential) ||
		ref.Requester != "" || ref.Dialog != "" || ref.Status != 401 {
		t.Fatalf("refused record %+v", ref)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the application saw %d requests", n)
	}
}

// Issue 26: -check-config refuses an ingress.audit section without a key to sign its
// checkpoints, and one with a bad sink.
func TestIssue26_ProxyIngressAuditChecked(t *testing.T) {
	with := func(section string) string {
		return strings.Replace(checkedIngressYAML, "  sign_responses: true\n", "  sign_responses: true\n  audit: "+section+"\n", 1)
	}
	expectCheckConfig(t, "no key", with("{sink: stdout}"), "ingress.audit needs key_file")
	expectCheckConfig(t, "bad sink", with("{sink: tape, key_file: k.jwk}"), "ingress.audit.sink")
	expectCheckConfig(t, "redis on memory", with("{sink: redis, key_file: k.jwk}"), "needs ingress.store.type redis")
	expectCheckConfig(t, "ok", with("{sink: stdout, key_file: k.jwk}"), "")
}
