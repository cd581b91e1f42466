package revokeapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/revoke/revoketest"
	"github.com/dialogtrust/dialogtrust/store"
)

type world struct {
	clock       *testkit.Clock
	store       *revoke.Memory
	srv         *httptest.Server
	url         string
	admin, user *testkit.Workload
	foreign     *testkit.Workload // of b.example, whose WITs the API trusts
	read        atomic.Int64      // octets of request bodies the handler read
	logins      fakeLogins
	domain      *testkit.Domain // a.example, whose workloads the tests make
	api         *revokeapi.Handler
}

func newWorld(t *testing.T) *world { t.Helper(); return newWorldWith(t, nil) }

// newWorldWith is newWorld with more of the handler's configuration set by configure
// (nil: none), before the handler is built.
func newWorldWith(t *testing.T, configure func(*revokeapi.Config)) *world {
	t.Helper()
	w := &world{clock: testkit.NewClock(testkit.Epoch)}
	a := testkit.NewDomain(t, "a.example", keys.ES256, w.clock)
	b := testkit.NewDomain(t, "b.example", keys.ES256, w.clock)
	a.TrustWITsOf(t, b)
	w.domain = a
	w.admin, w.user = a.Workload(t, "/ops/alice", keys.ES256), a.Workload(t, "/agent/a1", keys.ES256)
	w.foreign = b.Workload(t, "/ops/alice", keys.ES256)
	w.store = revoke.NewMemory(revoke.WithClock(w.clock.Now))
	w.srv = httptest.NewUnstartedServer(nil)
	w.url = "http://" + w.srv.Listener.Addr().String() + revokeapi.Path
	cfg := revokeapi.Config{
		Store:        w.store,
		Signatures:   httpsig.NewVerifier(a.Validator(), httpsig.WithAudiences(w.url), httpsig.WithReplay(store.NewMemory(store.WithClock(w.clock.Now))), httpsig.WithClock(w.clock.Now)),
		Admins:       []identifier.ID{w.admin.ID},
		TrustDomains: []string{"a.example"},
		DefaultTTL:   time.Hour,
		Now:          w.clock.Now,
		Sessions:     &w.logins,
	}
	if configure != nil {
		configure(&cfg)
	}
	h, err := revokeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.api = h
	w.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.Body = testkit.CountingBody{R: r.Body, N: &w.read}
		h.ServeHTTP(rw, r)
	})
	w.srv.Start()
	t.Cleanup(w.srv.Close)
	return w
}

func (w *world) client(wl *testkit.Workload) *revokeapi.Client {
	return &revokeapi.Client{URL: w.url, Signer: httpsig.NewSigner(wl.Key, wl.WIT, httpsig.WithClock(w.clock.Now))}
}

// live are the revocations in the world's store.
func (w *world) live(t *testing.T) []revoke.Revocation {
	t.Helper()
	return revoketest.MustList(t, w.store)
}

func send(t *testing.T, req *http.Request) (int, errcode.Code) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode < 300 {
		return res.StatusCode, ""
	}
	return res.StatusCode, errcode.CodeOf(problem.Read(res.StatusCode, b))
}

const dialogBody = `{"kind":"dialog","id":"D1","reason":"runaway","linked":true}`

// Issue 26: an administrator revokes, lists and lifts; the revocation names who made
// it and lasts the default ttl.
func TestIssue26_AdminRevokesListsLifts(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c := w.client(w.admin)
	r, err := c.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Linked: true, Reason: "runaway"})
	if err != nil {
		t.Fatal(err)
	}
	if r.By != w.admin.ID.String() || !r.Expires.Equal(w.clock.Now().Add(time.Hour)) || !r.Linked {
		t.Fatalf("revocation %+v", r)
	}
	if _, err := c.Revoke(ctx, revokeapi.Request{Kind: revoke.Workload, ID: w.user.ID.String(), Reason: "tricked", TTLSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	l, err := c.List(ctx)
	if err != nil || len(l) != 2 {
		t.Fatalf("List = %+v, %v", l, err)
	}
	if ok, err := c.Lift(ctx, revoke.Dialog, "D1"); !ok || err != nil {
		t.Fatalf("Lift = %v, %v", ok, err)
	}
	if l := w.live(t); len(l) != 1 || l[0].Kind != revoke.Workload {
		t.Fatalf("after Lift: %+v", l)
	}
}

// Issue 26, attacked: no credential, a workload that is not an administrator, and an
// administrator's name in another trust domain: refused, nothing changed, and (for
// the first two) no octet of the body read.
func TestIssue26_AdminRefusesWhoIsNotAnAdministrator(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	req, _ := http.NewRequest("POST", w.url, strings.NewReader(dialogBody))
	req.Header.Set("Content-Type", "application/json")
	if st, code := send(t, req); st != http.StatusUnauthorized || code != errcode.MissingCredential {
		t.Fatalf("unauthenticated: %d %s", st, code)
	}
	// A bearer token is no credential here.
	req, _ = http.NewRequest("GET", w.url, nil)
	req.Header.Set("Authorization", "Bearer "+w.admin.WIT)
	if st, code := send(t, req); st != http.StatusUnauthorized || code != errcode.MissingCredential {
		t.Fatalf("bearer: %d %s", st, code)
	}
	if _, err := w.client(w.user).Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Reason: "x"}); !errcode.Is(err, errcode.NotAuthorized) {
		t.Fatalf("a workload that is not an administrator: %v", err)
	}
	if _, err := w.client(w.user).List(ctx); !errcode.Is(err, errcode.NotAuthorized) {
		t.Fatalf("list by a workload that is not an administrator: %v", err)
	}
	// The same path as the administrator, in another trust domain.
	if _, err := w.client(w.foreign).Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Reason: "x"}); !errcode.Is(err, errcode.NotAuthorized) {
		t.Fatalf("another domain's workload of the same path: %v", err)
	}
	// A signature for another audience.
	req, _ = http.NewRequest("POST", w.url, strings.NewReader(dialogBody))
	req.Header.Set("Content-Type", "application/json")
	if _, err := httpsig.NewSigner(w.admin.Key, w.admin.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, "https://elsewhere.example/admin/revocations"); err != nil {
		t.Fatal(err)
	}
	if st, _ := send(t, req); st < 400 {
		t.Fatalf("a signature for another audience: %d", st)
	}
	if n := w.read.Load(); n != 0 {
		t.Fatalf("%d octets of the bodies of refused requests were read", n)
	}
	if l := w.live(t); len(l) != 0 {
		t.Fatalf("refused requests revoked %+v", l)
	}
}

// Issue 26, attacked: an administrator cannot revoke another trust domain's workload,
// and a replayed signed request is refused.
func TestIssue26_AdminRefusesCrossDomainAndReplay(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if _, err := w.client(w.admin).Revoke(ctx, revokeapi.Request{Kind: revoke.Workload, ID: "wimse://b.example/agent/x", Reason: "x"}); !errcode.Is(err, errcode.NotAuthorized) {
		t.Fatalf("another domain's workload: %v", err)
	}
	if _, err := w.client(w.admin).Lift(ctx, revoke.Workload, "wimse://b.example/agent/x"); !errcode.Is(err, errcode.NotAuthorized) {
		t.Fatalf("lifting another domain's workload: %v", err)
	}
	req, _ := http.NewRequest("POST", w.url, strings.NewReader(dialogBody))
	req.Header.Set("Content-Type", "application/json")
	if _, err := httpsig.NewSigner(w.admin.Key, w.admin.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, w.url); err != nil {
		t.Fatal(err)
	}
	again := req.Clone(ctx)
	if st, _ := send(t, req); st != http.StatusCreated {
		t.Fatalf("first: %d", st)
	}
	if _, err := w.store.Delete(ctx, revoke.Dialog, "D1"); err != nil {
		t.Fatal(err)
	}
	again.Body = io.NopCloser(strings.NewReader(dialogBody))
	if st, code := send(t, again); st < 400 || code != errcode.Replayed {
		t.Fatalf("replayed: %d %s", st, code)
	}
	if l := w.live(t); len(l) != 0 {
		t.Fatalf("refused requests revoked %+v", l)
	}
}

// Issue 26, attacked: what a browser on another site can send is refused, signed by
// the administrator or not: an HTML form's encodings, another Origin, a cross-site
// Sec-Fetch-Site, a method no one serves.
func TestIssue26_AdminRefusesCSRF(t *testing.T) {
	w := newWorld(t)
	signed := func(method, ct, body string, mutate func(*http.Request)) *http.Request {
		req, _ := http.NewRequest(method, w.url, strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if mutate != nil {
			mutate(req)
		}
		if _, err := httpsig.NewSigner(w.admin.Key, w.admin.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, w.url); err != nil {
			t.Fatal(err)
		}
		return req
	}
	for _, tc := range []struct {
		name   string
		req    *http.Request
		status int
		code   errcode.Code
	}{
		{"form", signed("POST", "application/x-www-form-urlencoded", "kind=dialog&id=D1&reason=x", nil), 400, errcode.InvalidRequest},
		{"text/plain", signed("POST", "text/plain", dialogBody, nil), 400, errcode.InvalidRequest},
		{"multipart", signed("POST", "multipart/form-data; boundary=x", "--x--", nil), 400, errcode.InvalidRequest},
		{"no type", signed("POST", "", dialogBody, nil), 400, errcode.InvalidRequest},
		{"json in latin1", signed("POST", "application/json; charset=iso-8859-1", dialogBody, nil), 400, errcode.InvalidRequest},
		{"other origin", signed("POST", "application/json", dialogBody, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }), 403, errcode.OriginNotAllowed},
		{"null origin", signed("DELETE", "", "", func(r *http.Request) { r.Header.Set("Origin", "null") }), 403, errcode.OriginNotAllowed},
		{"cross-site", signed("POST", "application/json", dialogBody, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }), 403, errcode.OriginNotAllowed},
		{"same-site", signed("GET", "", "", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }), 403, errcode.OriginNotAllowed},
	} {
		if st, code := send(t, tc.req); st != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, st, code, tc.status, tc.code)
		}
	}
	req := signed("PUT", "application/json", dialogBody, nil)
	if st, _ := send(t, req); st != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", st)
	}
	if l := w.live(t); len(l) != 0 {
		t.Fatalf("refused requests revoked %+v", l)
	}
}

// Issue 26, attacked: oversized and malformed bodies, invalid revocations.
func TestIssue26_AdminRefusesBadBodies(t *testing.T) {
	w := newWorld(t)
	post := func(body string, chunked bool) (int, errcode.Code) {
		req, _ := http.NewRequest("POST", w.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if _, err := httpsig.NewSigner(w.admin.Key, w.admin.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, w.url); err != nil {
			t.Fatal(err)
		}
		if chunked {
			req.ContentLength = -1
			req.Body = io.NopCloser(strings.NewReader(body))
		}
		return send(t, req)
	}
	big := `{"kind":"dialog","id":"D1","reason":"` + strings.Repeat("x", revokeapi.MaxBody) + `"}`
	for _, tc := range []struct {
		name    string
		body    string
		chunked bool
		status  int
		code    errcode.Code
	}{
		{"declared too large", big, false, 413, errcode.BodyTooLarge},
		{"chunked too large", big, true, 413, errcode.BodyTooLarge},
		{"unknown member", `{"kind":"dialog","id":"D1","reason":"x","admin":true}`, false, 400, errcode.InvalidRequest},
		{"member twice", `{"kind":"dialog","id":"D1","id":"D2","reason":"x"}`, false, 400, errcode.InvalidRequest},
		{"two values", dialogBody + dialogBody, false, 400, errcode.InvalidRequest},
		{"not an object", `["dialog","D1"]`, false, 400, errcode.InvalidRequest},
		{"unknown kind", `{"kind":"session","id":"D1","reason":"x"}`, false, 400, errcode.InvalidRequest},
		{"control character", `{"kind":"dialog","id":"D1\u0000<script>","reason":"x"}`, false, 400, errcode.InvalidRequest},
		{"negative ttl", `{"kind":"dialog","id":"D1","reason":"x","ttl_seconds":-5}`, false, 400, errcode.InvalidRequest},
		{"ttl over a year", `{"kind":"dialog","id":"D1","reason":"x","ttl_seconds":99999999999}`, false, 400, errcode.InvalidRequest},
		{"linked workload", `{"kind":"workload","id":"wimse://a.example/agent/a1","reason":"x","linked":true}`, false, 400, errcode.InvalidRequest},
	} {
		if st, code := post(tc.body, tc.chunked); st != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, st, code, tc.status, tc.code)
		}
	}
	if l := w.live(t); len(l) != 0 {
		t.Fatalf("refused requests revoked %+v", l)
	}
}

// An administrator of a trust domain the TTS does not serve cannot be configured.
func TestIssue26_AdminOfAnotherDomainIsNotConfigurable(t *testing.T) {
	_, err := revokeapi.New(revokeapi.Config{Store: revoke.NewMemory(), Signatures: &httpsig.Verifier{},
		Admins: []identifier.ID{identifier.MustParse("wimse://b.example/ops")}, TrustDomains: []string{"a.example"}, DefaultTTL: time.Hour})
	if err == nil {
		t.Fatal("an administrator of another trust domain was accepted")
	}
}
