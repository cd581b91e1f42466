package proxyservice

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
)

// Issue 22 point 4: the configuration keys bind_request (egress routes, proof wpt only)
// and require_signature_for_body (ingress, needs httpsig among the proofs).
func TestProxyCheckConfigIssue22_4(t *testing.T) {
	egress := checkedEgressYAML
	ingress := checkedIngressYAML
	for name, c := range map[string]struct{ yaml, want string }{
		"bind_request, wpt":          {strings.Replace(egress, "require_signed_response: true", "proof: wpt, bind_request: true", 1), ""},
		"bind_request, httpsig":      {strings.Replace(egress, "require_signed_response: true", "bind_request: true", 1), "bind_request is for proof wpt"},
		"require_signature_for_body": {ingress + "  require_signature_for_body: true\n", ""},
		"with both proofs":           {ingress + "  require_signature_for_body: true\n  proofs: [httpsig, wpt]\n", ""},
		"with WPTs alone":            {ingress + "  require_signature_for_body: true\n  proofs: [wpt]\n", "require_signature_for_body needs httpsig"},
	} {
		expectCheckConfig(t, name, c.yaml, c.want)
	}
}

// Issue 22 point 4, through "dialogtrust proxy": a WPT route with bind_request reaches
// an ingress, its body checked; an ingress with require_signature_for_body refuses the
// same request with missing_credential and takes one without a body.
func TestProxyCommandsIssue22_4(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	var (
		mu     sync.Mutex
		bodies []string
	)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		io.WriteString(w, "done")
	}))
	defer app.Close()
	open := startProxy(t, ingressYAML(witURL, ttsURL, app.URL)+"  proofs: [httpsig, wpt]\n")
	strict := startProxy(t, ingressYAML(witURL, ttsURL, app.URL)+"  require_signature_for_body: true\n")
	eg := strings.Replace(egressYAML(witURL, ttsURL, open["ingress"]), "require_signed_response: true", "proof: wpt, bind_request: true", 1)
	eg += `    - {prefix: /strict, upstream: ` + strict["ingress"] + `, audience: a.example, scope: trip.book, recipient: "https://t1.a.example/", proof: wpt, bind_request: true}` + "\n"
	out := startProxy(t, eg)

	do := func(method, path, body string) (int, errcode.Code) {
		t.Helper()
		res, b := testkit.Do(t, http.DefaultClient, startDialogRequest(method, out["egress"]+path, body))
		mu.Lock()
		defer mu.Unlock()
		return res.StatusCode, errcode.CodeOf(problem.Read(res.StatusCode, b))
	}
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
	if status, code := do("POST", "/t1", `{"q":1}`); status != 200 || len(seen()) != 1 || seen()[0] != `{"q":1}` {
		t.Fatalf("bound WPT with a body: %d %s, the application got %q", status, code, seen())
	}
	if status, code := do("POST", "/strict", `{"q":1}`); code != errcode.MissingCredential || len(seen()) != 1 {
		t.Fatalf("require_signature_for_body, WPT with a body: %d %s", status, code)
	}
	if status, code := do("GET", "/strict", ""); status != 200 || len(seen()) != 2 {
		t.Fatalf("require_signature_for_body, WPT without a body: %d %s", status, code)
	}
}
