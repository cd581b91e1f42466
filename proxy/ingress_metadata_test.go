package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

const (
	metadataResource = "https://t1.a.example/mcp"
	metadataPath     = "/.well-known/oauth-protected-resource/mcp"
	metadataURL      = "https://t1.a.example" + metadataPath
)

// metadataPair is a pair whose ingress publishes protected resource metadata and whose
// route reaches the ingress at its root, so that verified requests can name any path.
func metadataPair(t *testing.T, method proof.Method, app func(w http.ResponseWriter, r *http.Request, body []byte)) *pair {
	return newPair(t, pairOptions{method: method, unsignedOK: true, app: app,
		receiver: func(identifier.ID) []dialog.ReceiverOption {
			return []dialog.ReceiverOption{dialog.WithResourceMetadata(dialog.ResourceMetadata{Resource: metadataResource,
				AuthorizationServers: []string{"https://tts.a.example"}, ScopesSupported: []string{"trip.book"}})}
		},
		route: func(_ identifier.ID, r *proxy.Route) { r.Upstream = strings.TrimSuffix(r.Upstream, "/mcp") },
	})
}

func do(t *testing.T, method, url string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	return request(t, method, url, "", h)
}

// RFC 9728 section 3: the ingress serves the receiver's metadata itself, to anyone,
// with GET and HEAD only, and never asks the application.
func TestIngressServesResourceMetadata(t *testing.T) {
	p := metadataPair(t, proof.HTTPSig, nil)
	res, body := do(t, http.MethodGet, p.ingress.URL+metadataPath, nil)
	var md map[string]any
	mustOK(t, json.Unmarshal(body, &md))
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || md["resource"] != metadataResource ||
		md["authorization_servers"].([]any)[0] != "https://tts.a.example" || len(md["bearer_methods_supported"].([]any)) != 0 {
		t.Fatalf("%d %v %s", res.StatusCode, res.Header, body)
	}
	if res, body := do(t, http.MethodHead, p.ingress.URL+metadataPath, nil); res.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("HEAD %d %q", res.StatusCode, body)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if res, body := do(t, m, p.ingress.URL+metadataPath, nil); res.StatusCode != http.StatusMethodNotAllowed || codeOf(res.StatusCode, body) != errcode.InvalidRequest {
			t.Fatalf("%s %d %s", m, res.StatusCode, body)
		}
	}
	if p.app.hits() != 0 {
		t.Fatalf("the application was asked %d times", p.app.hits())
	}
}

// The application cannot publish other metadata for this resource, nor override the
// ingress's: a verified request to any path under the well-known prefix is answered by
// the ingress (the document, 405, or no_route) and never forwarded.
func TestIngressWellKnownNeverForwarded(t *testing.T) {
	p := metadataPair(t, proof.HTTPSig, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"resource":"https://evil.example","authorization_servers":["https://evil.example"]}`)
	})
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/other", "/.well-known/oauth-protected-resource/mcp/x"} {
		res, body := do(t, http.MethodGet, p.egress.URL+"/t1"+path, nil)
		if res.StatusCode != http.StatusNotFound || codeOf(res.StatusCode, body) != errcode.NoRoute {
			t.Errorf("%s: %d %s", path, res.StatusCode, body)
		}
	}
	// Signed and verified, a POST to the document's own path is still the ingress's.
	res, body := p.call(t, "/t1"+metadataPath, `{}`, nil)
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d %s", res.StatusCode, body)
	}
	res, body = do(t, http.MethodGet, p.egress.URL+"/t1"+metadataPath, nil)
	if res.StatusCode != 200 || !strings.Contains(string(body), metadataResource) || strings.Contains(string(body), "evil") {
		t.Errorf("GET: %d %s", res.StatusCode, body)
	}
	if p.app.hits() != 0 {
		t.Fatalf("the application was asked %d times", p.app.hits())
	}
	// The rest of the resource is forwarded as ever.
	if res, body := p.call(t, "/t1/mcp", `{}`, nil); res.StatusCode != 200 || p.app.hits() != 1 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

// RFC 9728 section 5.1 and wpt section 2.1: the ingress's 401s, the receiver's and its
// own, carry WWW-Authenticate: WPT with resource_metadata; other refusals carry none,
// and the application's own 401 keeps its own challenge.
func TestIngress401CarriesResourceMetadata(t *testing.T) {
	p := metadataPair(t, proof.WPT, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("WWW-Authenticate", `Basic realm="app"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	want := `WPT resource_metadata="` + metadataURL + `"`
	res, body := do(t, http.MethodPost, p.ingress.URL+"/mcp", nil)
	if res.StatusCode != 401 || codeOf(res.StatusCode, body) != errcode.MissingCredential || res.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("%d %v %s", res.StatusCode, res.Header, body)
	}
	res, body = do(t, http.MethodPost, p.ingress.URL+"/mcp/../x", nil)
	if res.StatusCode != 400 || res.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("%d %v %s", res.StatusCode, res.Header, body)
	}
	res, body = p.call(t, "/t1/mcp", `{}`, nil)
	if res.StatusCode != 401 || res.Header.Get("WWW-Authenticate") != `Basic realm="app"` {
		t.Fatalf("the application's 401: %d %v %s", res.StatusCode, res.Header, body)
	}
}

// The ingress's own 401s (here a boundary-facing ingress's missing access token,
// refused before the receiver runs) carry the receiver's challenge too.
func TestIngressOwn401CarriesResourceMetadata(t *testing.T) {
	d := startDomain(t)
	wits := wit.NewValidator(d.trust)
	rc, err := dialog.NewReceiver(dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences("https://b1.b.example/"))),
		dialog.WithResourceMetadata(dialog.ResourceMetadata{Resource: "https://b1.b.example/hotel"}))
	mustOK(t, err)
	in, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: "http://127.0.0.1:1", Boundary: &proxy.BoundaryIngress{
		Acceptor:  &agent.LinkAcceptor{TTS: &txntoken.Client{}, AccessTokens: &chaining.AccessTokenVerifier{}, TrustDomain: "b.example"},
		TxnTokens: txntoken.NewVerifier(d.ttsKeys, "b.example"),
	}})
	mustOK(t, err)
	rec := httptest.NewRecorder()
	in.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "https://b1.b.example/hotel", nil))
	if rec.Code != 401 || codeOf(rec.Code, rec.Body.Bytes()) != errcode.MissingCredential ||
		rec.Header().Get("WWW-Authenticate") != `WPT resource_metadata="https://b1.b.example/.well-known/oauth-protected-resource/hotel"` {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	// The metadata is public: served before the boundary's check for an access token.
	rec = httptest.NewRecorder()
	in.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://b1.b.example/.well-known/oauth-protected-resource/hotel", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"resource":"https://b1.b.example/hotel"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
