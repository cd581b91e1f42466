package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// expectContinue writes a POST of body's length to the ingress over TCP with the
// fields of h and Expect: 100-continue, without the body, and returns the first answer
// the server gives (a 100 Continue is returned as it is). With the 100 Continue it then
// sends body and returns the final answer after it.
func expectContinue(t *testing.T, p *pair, path string, h http.Header, body string) (first, final *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", p.ingress.Listener.Addr().String())
	mustOK(t, err)
	defer conn.Close()
	mustOK(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, p.ingress.Listener.Addr())
	for k, vs := range h {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body))
	_, err = io.WriteString(conn, b.String())
	mustOK(t, err)
	br := bufio.NewReader(conn)
	first, err = http.ReadResponse(br, nil)
	mustOK(t, err)
	if first.StatusCode != http.StatusContinue {
		return first, nil
	}
	_, err = io.WriteString(conn, body)
	mustOK(t, err)
	final, err = http.ReadResponse(br, nil)
	mustOK(t, err)
	return first, final
}

// signedFor is the fields of a POST of body to the ingress's path, HTTP-signed by a1
// for the ingress's recipient, with the fields of extra covered.
func signedFor(t *testing.T, p *pair, path, body string, extra http.Header) http.Header {
	t.Helper()
	c, err := p.a1src.Credential(context.Background())
	mustOK(t, err)
	req := httptest.NewRequest("POST", p.ingress.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range extra {
		req.Header[k] = v
	}
	_, err = httpsig.NewSigner(c.Key, c.WIT).SignRequest(req, p.recipient)
	mustOK(t, err)
	req.Header.Del("Content-Type") // expectContinue writes it
	return req.Header
}

// Issue 22 point 3, against a real net/http server: the ingress reads no body before
// the receiver authenticated the request, so a client that sent Expect: 100-continue
// gets no 100 Continue for an unsigned request, nor for a signed one whose Txn-Token
// is refused; a request that verifies gets it, sends its body, and reaches the
// application with exactly that body.
func TestIssue22_3_IngressNoContinueBeforeAuthentication(t *testing.T) {
	p := newPair(t, pairOptions{unsignedOK: true})
	const body = `{"q":1}`
	for name, c := range map[string]struct {
		h    http.Header
		code errcode.Code
	}{
		"unsigned":      {http.Header{}, errcode.MissingCredential},
		"bad Txn-Token": {signedFor(t, p, "/mcp/x", body, http.Header{txntoken.HeaderName: {"not.a.token"}}), errcode.InvalidEncoding},
		"bad signature": {func() http.Header {
			h := signedFor(t, p, "/mcp/x", body, nil)
			h.Set("Content-Digest", "sha-256=:AAAA:")
			return h
		}(), errcode.InvalidSignature},
		"Dialog-Context?": {signedFor(t, p, "/mcp/x", body, http.Header{dialog.HeaderName: {`dlg="D1"`}}), errcode.InvalidDialogContext},
	} {
		t.Run(name, func(t *testing.T) {
			first, _ := expectContinue(t, p, "/mcp/x", c.h, body)
			defer first.Body.Close()
			if first.StatusCode == http.StatusContinue {
				t.Fatal("the ingress sent 100 Continue to a request it had not authenticated")
			}
			b, _ := io.ReadAll(first.Body)
			if got := codeOf(first.StatusCode, b); got != c.code {
				t.Fatalf("%d %s, want %s", first.StatusCode, b, c.code)
			}
			if p.app.hits() != 0 {
				t.Fatal("the request reached the application")
			}
		})
	}
	t.Run("verified", func(t *testing.T) {
		first, final := expectContinue(t, p, "/mcp/x", signedFor(t, p, "/mcp/x", body, nil), body)
		first.Body.Close()
		if first.StatusCode != http.StatusContinue || final == nil {
			t.Fatalf("a verified request got %d, not 100 Continue", first.StatusCode)
		}
		defer final.Body.Close()
		b, _ := io.ReadAll(final.Body)
		if final.StatusCode != 200 || p.app.hits() != 1 || p.app.body[0] != body {
			t.Fatalf("%d %s; the application got %q", final.StatusCode, b, p.app.body)
		}
	})
}

// Issue 22 point 4: on a WPT route that binds the request (Route.BindRequest), the
// method, the path and the body changed between the proxies are refused by the
// ingress with a stable code, and nothing reaches the application; the request as
// the agent sent it passes, its body intact.
func TestIssue22_4_PairWPTBindsRequest(t *testing.T) {
	p := newPair(t, pairOptions{method: proof.WPT, route: func(_ identifier.ID, r *proxy.Route) { r.BindRequest = true }})
	res, body := p.call(t, "/t1/a?x=1", `{"q":1}`, start())
	if res.StatusCode != 200 || p.app.hits() != 1 || p.app.body[0] != `{"q":1}` {
		t.Fatalf("%d %s; the application got %q", res.StatusCode, body, p.app.body)
	}
	for name, c := range map[string]struct {
		tamper func(r *http.Request)
		code   errcode.Code
	}{
		"method changed": {func(r *http.Request) { r.Method = "PUT" }, errcode.OtherTokenBindingMismatch},
		"path changed":   {func(r *http.Request) { r.URL.Path = "/mcp/b" }, errcode.OtherTokenBindingMismatch},
		"query changed":  {func(r *http.Request) { r.URL.RawQuery = "x=2" }, errcode.OtherTokenBindingMismatch},
		"body changed": {func(r *http.Request) {
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(`{"q":9}`)), 7
		}, errcode.ContentDigestMismatch},
		"Content-Digest dropped": {func(r *http.Request) { r.Header.Del("Content-Digest") }, errcode.OtherTokenBindingMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			p.tamper = c.tamper
			defer func() { p.tamper = nil }()
			hits := p.app.hits()
			res, body := p.call(t, "/t1/a?x=1", `{"q":1}`, start())
			if res.StatusCode < 400 {
				t.Fatalf("the tampered request succeeded: %d %s", res.StatusCode, body)
			}
			if got, doc := p.ingressCode(); got != c.code {
				t.Fatalf("ingress code %s (%s), want %s", got, doc, c.code)
			}
			if p.app.hits() != hits {
				t.Fatal("the tampered request reached the application")
			}
		})
	}
}

// Issue 22 point 4: an ingress whose receiver requires an HTTP signature for a body
// (dialog.RequireSignatureForBody; ingress.require_signature_for_body) refuses a WPT
// request with a body, even one whose WPT binds it, and takes one without.
func TestIssue22_4_IngressRequiresSignatureForBody(t *testing.T) {
	p := newPair(t, pairOptions{method: proof.WPT,
		route: func(_ identifier.ID, r *proxy.Route) { r.BindRequest = true },
		receiver: func(identifier.ID) []dialog.ReceiverOption {
			return []dialog.ReceiverOption{dialog.RequireSignatureForBody()}
		}})
	res, body := p.call(t, "/t1", `{"q":1}`, start())
	if got := codeOf(res.StatusCode, body); got != errcode.MissingCredential || p.app.hits() != 0 {
		t.Fatalf("a WPT request with a body: %d %s, %d at the application", res.StatusCode, body, p.app.hits())
	}
	req, err := http.NewRequest("GET", p.egress.URL+"/t1", nil)
	mustOK(t, err)
	req.Header.Set(proxy.StartDialogField, "?1")
	res2, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	b, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	if res2.StatusCode != 200 || p.app.hits() != 1 {
		t.Fatalf("a WPT request without a body: %d %s", res2.StatusCode, b)
	}
}
