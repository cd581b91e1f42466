package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// unixClient is a net/http client whose every connection goes to the socket at path.
func unixClient(path string) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}}}
}

// Both local hops on Unix sockets, as a sidecar's usually are: the agent reaches the
// egress on its socket, the ingress reaches the application on its socket with a base
// path; the network hop between the proxies stays TCP. The dialog starts and
// continues, and the application sees what was verified.
func TestPairUnixSockets(t *testing.T) {
	dir := t.TempDir()
	appSock, egressSock := filepath.Join(dir, "app.sock"), filepath.Join(dir, "egress.sock")
	appLn, err := net.Listen("unix", appSock)
	mustOK(t, err)
	p := newPair(t, pairOptions{stateful: true, appListener: appLn, ingress: func(c *proxy.IngressConfig) {
		c.Upstream, c.UpstreamPath = "unix://"+appSock, "/app"
	}})
	egressLn, err := net.Listen("unix", egressSock)
	mustOK(t, err)
	srv := &http.Server{Handler: p.egress.Config.Handler}
	go srv.Serve(egressLn)
	t.Cleanup(func() { srv.Close() })
	agent := unixClient(egressSock)

	call := func(path string, h http.Header) (*http.Response, string) {
		req, err := http.NewRequest("POST", "http://egress"+path, strings.NewReader(`{"q":1}`))
		mustOK(t, err)
		for k, v := range h {
			req.Header[k] = v
		}
		res, err := agent.Do(req)
		mustOK(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b)
	}
	res, body := call("/t1/tools?x=1", start())
	dc, err := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || err != nil || dc == nil || !dc.Initiator().Equal(p.a1) {
		t.Fatalf("%d %s %v", res.StatusCode, body, res.Header)
	}
	r := p.app.last()
	if r.URL.Path != "/app/mcp/tools" || r.URL.RawQuery != "x=1" || r.Header.Get(proxy.VerifiedSenderField) != p.a1.String() ||
		r.Header.Get(proxy.VerifiedDialogField) != dc.DLG() || r.Header.Get(proxy.VerifiedEstablishedField) != "true" {
		t.Fatalf("the application got %s ? %s %v", r.URL.Path, r.URL.RawQuery, r.Header)
	}
	if r.Header.Get("Txn-Token") != "" || r.Header.Get("Signature") != "" {
		t.Fatal("the application sees a credential")
	}
	res, body = call("/t1", http.Header{dialog.HeaderName: {dc.Value()}})
	if res.StatusCode != 200 || res.Header.Get(dialog.HeaderName) != dc.Value() {
		t.Fatalf("continue: %d %s", res.StatusCode, body)
	}
	if r := p.app.last(); r.URL.Path != "/app/mcp" || r.Header.Get(proxy.VerifiedEstablishedField) != "false" {
		t.Fatalf("continue: the application got %s %v", r.URL.Path, r.Header)
	}
	if p.app.hits() != 2 {
		t.Fatalf("%d requests reached the application", p.app.hits())
	}
}

// What an ingress takes as the application's address.
func TestCheckIngressUpstream(t *testing.T) {
	for _, c := range []struct {
		upstream, path string
		ok             bool
	}{
		{"unix:///run/app/app.sock", "", true},
		{"unix:///run/app/app.sock", "/mcp", true},
		{"unix:///run/app/app.sock", "/mcp/", true},
		{"http://127.0.0.1:8000/mcp", "", true},
		{"http://127.0.0.1:8000", "/mcp", false}, // a base path of its own only for a socket
		{"unix://run/app.sock", "", false},       // relative: "run" would be a host
		{"unix:///run/../app.sock", "", false},
		{"unix:///run/app.sock?x=1", "", false},
		{"unix:///run/app.sock", "mcp", false},
		{"unix:///run/app.sock", "/a/../b", false},
		{"unix:///run/app.sock", "/a?b", false},
		{"http://t1.example/", "", false}, // plain HTTP off loopback
	} {
		err := proxy.CheckIngressUpstream(c.upstream, c.path, false)
		if (err == nil) != c.ok {
			t.Errorf("%s %s: %v", c.upstream, c.path, err)
		}
		if err != nil && errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Errorf("%s %s: code %v", c.upstream, c.path, errcode.CodeOf(err))
		}
	}
	if _, err := proxy.NewIngress(proxy.IngressConfig{Receiver: &dialog.Receiver{}, Upstream: "unix:///run/app.sock", Transport: http.DefaultTransport}); err == nil {
		t.Error("a Unix socket upstream with a transport of the caller's accepted")
	}
}
