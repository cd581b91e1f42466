package wpt_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// boundRequest is a request whose WPT binds its method, path, query and body.
func boundRequest(t *testing.T, f *fixture, method, target, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if err := wpt.SignRequest(req, f.w.Key, f.w.WIT, aud, wpt.RequestOptions{BindRequest: true}, wpt.WithClock(f.clock.Now)); err != nil {
		t.Fatal(err)
	}
	return req
}

// Issue 22 point 4: a WPT whose route binds the request (BindRequest) binds the
// method, the path, the query and, through Content-Digest, the body; a change to any
// of them on the way is refused with a stable code. The request is fine as sent.
func TestIssue22_4_WPTBindsMethodPathQueryBody(t *testing.T) {
	const target = "https://tool.a.example/invoke/x?a=1"
	setBody := func(r *http.Request, b string) {
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(b)), int64(len(b))
	}
	for name, c := range map[string]struct {
		method, body string
		tamper       func(r *http.Request)
		code         errcode.Code
	}{
		"as sent":                {"POST", `{"q":1}`, func(*http.Request) {}, ""},
		"as sent, no body":       {"GET", "", func(*http.Request) {}, ""},
		"method changed":         {"POST", `{"q":1}`, func(r *http.Request) { r.Method = "PUT" }, errcode.OtherTokenBindingMismatch},
		"path changed":           {"POST", `{"q":1}`, func(r *http.Request) { r.URL.Path = "/invoke/y" }, errcode.OtherTokenBindingMismatch},
		"query changed":          {"POST", `{"q":1}`, func(r *http.Request) { r.URL.RawQuery = "a=2" }, errcode.OtherTokenBindingMismatch},
		"query removed":          {"POST", `{"q":1}`, func(r *http.Request) { r.URL.RawQuery = "" }, errcode.OtherTokenBindingMismatch},
		"body changed":           {"POST", `{"q":1}`, func(r *http.Request) { setBody(r, `{"q":9}`) }, errcode.ContentDigestMismatch},
		"body added to none":     {"GET", "", func(r *http.Request) { setBody(r, `{"q":9}`) }, errcode.ContentDigestMismatch},
		"Content-Digest removed": {"POST", `{"q":1}`, func(r *http.Request) { r.Header.Del("Content-Digest") }, errcode.OtherTokenBindingMismatch},
		"body and digest replaced": {"POST", `{"q":1}`, func(r *http.Request) {
			setBody(r, `{"q":9}`)
			r.Header.Set("Content-Digest", "sha-256=:ZGlmZmVyZW50ZGlmZmVyZW50ZGlmZmVyZW50ZGlmZmU=:")
		}, errcode.OtherTokenBindingMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "ES256")
			req := boundRequest(t, f, c.method, target, c.body)
			c.tamper(req)
			res, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !res.Claims.BindsRequest() {
					t.Fatalf("the proof does not bind the request: %v", res.Claims.Oth)
				}
				got, _ := io.ReadAll(req.Body)
				if string(got) != c.body {
					t.Fatalf("the body put back is %q, want %q", got, c.body)
				}
				return
			}
			wantCode(t, err, c.code)
		})
	}
}

// Without BindRequest a WPT with a fixed audience binds neither the method, the path
// nor the body (wpt-02 section 3.3): what docs/proxy.md says a WPT route leaves
// unprotected. This test fails if that changes, so the documentation is revisited.
func TestIssue22_4_UnboundWPTLeavesRequestOpen(t *testing.T) {
	f := newFixture(t, "ES256")
	req := httptest.NewRequest("POST", "https://tool.a.example/invoke/x", strings.NewReader(`{"q":1}`))
	if err := wpt.SignRequest(req, f.w.Key, f.w.WIT, aud, wpt.RequestOptions{}, wpt.WithClock(f.clock.Now)); err != nil {
		t.Fatal(err)
	}
	req.Method, req.URL.Path = "DELETE", "/admin"
	req.Body = io.NopCloser(strings.NewReader(`{"q":9}`))
	res, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Claims.BindsContent() || res.Claims.BindsRequest() {
		t.Fatalf("an unbound proof claims a binding: %v", res.Claims.Oth)
	}
}

// The jti is claimed after the bound body's check: a request refused for its body does
// not spend the jti of the proof, and the request as sent is accepted once, then only.
func TestIssue22_4_JTIClaimedAfterContent(t *testing.T) {
	f := newFixture(t, "ES256")
	req := boundRequest(t, f, "POST", aud, `{"q":1}`)
	authz, digest := req.Header.Get("Authorization"), req.Header.Get("Content-Digest")
	fresh := func(body string) *http.Request {
		r := httptest.NewRequest("POST", aud, strings.NewReader(body))
		r.Header.Set("Workload-Identity-Token", f.w.WIT)
		r.Header.Set("Authorization", authz)
		r.Header.Set("Content-Digest", digest)
		return r
	}
	_, err := f.v.VerifyRequest(context.Background(), fresh(`{"q":9}`), wpt.RequestOptions{})
	wantCode(t, err, errcode.ContentDigestMismatch)
	if _, err := f.v.VerifyRequest(context.Background(), fresh(`{"q":1}`), wpt.RequestOptions{}); err != nil {
		t.Fatalf("the refused body spent the jti: %v", err)
	}
	_, err = f.v.VerifyRequest(context.Background(), fresh(`{"q":1}`), wpt.RequestOptions{})
	wantCode(t, err, errcode.Replayed)
}

// Verify, which is given no request, does not understand a bound request's oth keys
// and refuses the proof (wpt-02 section 2), rather than accept it unchecked.
func TestIssue22_4_VerifyWithoutRequestRefusesBoundProof(t *testing.T) {
	f := newFixture(t, "ES256")
	req := boundRequest(t, f, "POST", aud, `{}`)
	proof := strings.TrimPrefix(req.Header.Get("Authorization"), "WPT ")
	_, err := f.v.Verify(context.Background(), f.w.WIT, proof, wpt.Bound{})
	wantCode(t, err, errcode.OtherTokenBindingMismatch)
}
