package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// The one mapping gives every grant's rejections their RFC 6749, RFC 8693 and RFC 7523
// errors (oauth.md 1.11).
func TestErrorFor(t *testing.T) {
	for _, tc := range []struct {
		err    error
		oauth  string
		status int
	}{
		{errcode.Unavailable(errcode.StoreUnavailable, nil, "x"), ErrTemporarilyUnavailable, 503},
		{At(StageClient, errcode.Unavailable(errcode.KeysUnavailable, nil, "x")), ErrTemporarilyUnavailable, 503},
		{errors.New("no code"), ErrServerError, 500},
		{errcode.New(errcode.Internal, "x"), ErrServerError, 500},
		{errcode.New(errcode.UnsupportedGrantType, "x"), ErrUnsupportedGrantType, 400},
		{errcode.New(errcode.BodyTooLarge, "x"), ErrInvalidRequest, 413},
		{At(StageClient, errcode.New(errcode.InvalidSignature, "x")), ErrInvalidClient, 401},
		{At(StageRequest, errcode.New(errcode.AudienceNotServed, "x")), ErrInvalidTarget, 400},
		{At(StageRequest, errcode.New(errcode.UnknownPeer, "x")), ErrInvalidTarget, 400},
		{At(StageScope, errcode.New(errcode.ScopeTooBroad, "x")), ErrInvalidScope, 400},
		{At(StageRequest, errcode.New(errcode.ScopeUnknown, "x")), ErrInvalidScope, 400},
		{At(StagePolicy, errcode.New(errcode.InvalidClaim, "x")), ErrUnauthorizedClient, 400},
		{errcode.New(errcode.WorkloadNotAllowed, "x"), ErrUnauthorizedClient, 400},
		{At(StageGrant, errcode.New(errcode.Replayed, "x")), ErrInvalidGrant, 400},
		{At(StageSubject, errcode.New(errcode.InvalidSignature, "x")), ErrInvalidRequest, 400},
		{errcode.New(errcode.InvalidRequest, "x"), ErrInvalidRequest, 400},
	} {
		if o, st := ErrorFor(tc.err); o != tc.oauth || st != tc.status {
			t.Fatalf("%v: %s %d, want %s %d", tc.err, o, st, tc.oauth, tc.status)
		}
	}
}

// fakeGrant serves one grant type and records what it was given.
type fakeGrant struct {
	name, grantType string
	check, fail     error
	auth            *ClientAuth
	client          *Client
	steps           []string
	served, done    int
}

func (f *fakeGrant) Name() string                { return f.name }
func (f *fakeGrant) Match(tr *TokenRequest) bool { return tr.GrantType == f.grantType }
func (f *fakeGrant) Check(*TokenRequest, *Record) error {
	f.steps = append(f.steps, "check")
	return f.check
}
func (f *fakeGrant) ClientAuth() *ClientAuth {
	if f.auth == nil {
		f.auth = &ClientAuth{Authenticators: []Authenticator{&fakeAuth{}}, Missing: "no fake credential"}
	}
	return f.auth
}
func (f *fakeGrant) Done(context.Context, *http.Request, *Record) { f.done++ }
func (f *fakeGrant) Handle(_ context.Context, r *http.Request, tr *TokenRequest, c *Client, rec *Record) (Response, error) {
	f.served++
	f.client = c
	f.steps = append(f.steps, "handle")
	if f.fail != nil {
		return nil, f.fail
	}
	return &TokenResponse{AccessToken: f.name, TokenType: "N_A", ExpiresIn: 1}, nil
}

// fakeAuth is a client authentication method: the X-Fake field, whose value "good"
// authenticates wimse://example.org/fake and anything else is refused.
type fakeAuth struct {
	grant *fakeGrant // when set, told each authentication as a step
	tried int
}

const fakeClient = "wimse://example.org/fake"

func (*fakeAuth) Name() string { return "m" }
func (*fakeAuth) Present(r *http.Request, _ *TokenRequest) bool {
	return len(r.Header.Values("X-Fake")) > 0
}
func (a *fakeAuth) Authenticate(_ context.Context, r *http.Request, _ *TokenRequest) (*Client, error) {
	a.tried++
	if a.grant != nil {
		a.grant.steps = append(a.grant.steps, "authenticate")
	}
	if r.Header.Get("X-Fake") != "good" {
		return nil, errcode.New(errcode.InvalidSignature, "a bad fake credential")
	}
	return &Client{ID: identifier.MustParse(fakeClient), Method: "m"}, nil
}

type records []*Record

func (r *records) Observe(rec *Record) { *r = append(*r, rec) }

// The endpoint routes a parsed request to the handler that matches it, everything else
// (and every request refused before it parsed) to the fallback, and tells the observer.
func TestEndpointRouting(t *testing.T) {
	fb := &fakeGrant{name: "fallback", fail: errcode.New(errcode.UnsupportedGrantType, "nobody serves it")}
	a := &fakeGrant{name: "a", grantType: "urn:a"}
	b := &fakeGrant{name: "b", grantType: "urn:b", fail: At(StageGrant, errcode.New(errcode.Replayed, "again"))}
	var obs records
	ep, err := NewEndpoint(EndpointConfig{Fallback: fb, Handlers: []Handler{a, b}, Observer: &obs})
	if err != nil {
		t.Fatal(err)
	}
	post := func(body, ct string) (int, map[string]any) {
		req := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("X-Fake", "good")
		rec := httptest.NewRecorder()
		ep.ServeHTTP(rec, req)
		if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("Cache-Control %q", cc)
		}
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m
	}
	form := "application/x-www-form-urlencoded"
	if st, m := post("grant_type="+url.QueryEscape("urn:a"), form); st != 200 || m["access_token"] != "a" {
		t.Fatalf("a: %d %v", st, m)
	}
	if st, m := post("grant_type=urn:b", form); st != 400 || m["error"] != ErrInvalidGrant || m["code"] != string(errcode.Replayed) {
		t.Fatalf("b: %d %v", st, m)
	}
	if st, m := post("grant_type=password", form); st != 400 || m["error"] != ErrUnsupportedGrantType {
		t.Fatalf("other: %d %v", st, m)
	}
	// Refused before parsing: the fallback reports it, without being asked to serve it.
	if st, m := post("grant_type=urn:a&grant_type=urn:a", form); st != 400 || m["error"] != ErrInvalidRequest {
		t.Fatalf("repeated: %d %v", st, m)
	}
	if st, m := post("grant_type=urn:a", "application/json"); st != 400 || m["error"] != ErrInvalidRequest {
		t.Fatalf("content type: %d %v", st, m)
	}
	if st, _ := post("x="+strings.Repeat("a", DefaultMaxBodySize), form); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %d", st)
	}
	if a.served != 1 || b.served != 1 || fb.served != 1 || a.done != 1 || b.done != 1 || fb.done != 4 {
		t.Fatalf("served a %d b %d fallback %d; done a %d b %d fallback %d", a.served, b.served, fb.served, a.done, b.done, fb.done)
	}
	want := []string{"a", "b", "fallback", "fallback", "fallback", "fallback"}
	if len(obs) != len(want) {
		t.Fatalf("%d records", len(obs))
	}
	for i, r := range obs {
		if r.Handler != want[i] || (r.Err == nil) != (i == 0) || r.Status == 0 || r.RequestID == "" {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if obs[3].Request != nil || obs[1].Error != ErrInvalidGrant || obs[1].Method != "m" {
		t.Fatalf("records %+v %+v", obs[1], obs[3])
	}
}

// CheckBounds applies a grant's own bounds to the parameters the form parser leaves
// loose or unknown.
func TestCheckBounds(t *testing.T) {
	limits := map[string]int{"assertion": 10}
	for body, ok := range map[string]bool{
		"assertion=a.b.c&x=y":                  true,
		"assertion=" + strings.Repeat("a", 11): false,
		"x=" + strings.Repeat("a", 21):         false,
		strings.Repeat("n", 21) + "=1":         false,
		"x=%ff":                                false,
		"x=%zz":                                false,
		"resource=%zz":                         false,
		"request_context=" + strings.Repeat("a", 21):    false,
		"subject_token=" + strings.Repeat("a", 20):      true,
		"actor_token=" + strings.Repeat("a", 20) + "&z": true,
	} {
		tr, err := ParseTokenRequest([]byte(body))
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if err := tr.CheckBounds(limits, 20); (err == nil) != ok || err != nil && errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Fatalf("%q: %v", body, err)
		}
	}
}

// readBody takes a body of its declared length, refuses one that runs past it or
// stops short of it, and bounds one of unknown length; at exactly the bound an octet
// past it is left to http.MaxBytesReader, as it always was.
func TestReadBody(t *testing.T) {
	const max = 16
	for _, tc := range []struct {
		name     string
		body     string
		declared int64
		want     string // "" with wantErr
		wantErr  bool
		tooLarge bool // a *http.MaxBytesError
	}{
		{name: "declared", body: "grant_type=a", declared: 12, want: "grant_type=a"},
		{name: "declared, at the bound", body: strings.Repeat("a", max), declared: max, want: strings.Repeat("a", max)},
		{name: "more than declared", body: "grant_type=ab", declared: 12, wantErr: true},
		{name: "less than declared", body: "grant_type=a", declared: 13, wantErr: true},
		{name: "more than declared at the bound", body: strings.Repeat("a", max+1), declared: max, want: strings.Repeat("a", max)},
		{name: "unknown length", body: "grant_type=a", declared: -1, want: "grant_type=a"},
		{name: "unknown length, over the bound", body: strings.Repeat("a", max+1), declared: -1, tooLarge: true, wantErr: true},
		{name: "declared over the bound", body: strings.Repeat("a", max+1), declared: max + 1, tooLarge: true, wantErr: true},
	} {
		r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(tc.body))
		r.ContentLength = tc.declared
		b, err := readBody(httptest.NewRecorder(), r, max)
		var tooBig *http.MaxBytesError
		switch {
		case (err != nil) != tc.wantErr:
			t.Errorf("%s: %q, %v", tc.name, b, err)
		case tc.tooLarge != errors.As(err, &tooBig):
			t.Errorf("%s: %v, want a MaxBytesError: %v", tc.name, err, tc.tooLarge)
		case err == nil && (string(b) != tc.want || tc.declared > 0 && cap(b) != len(b)):
			t.Errorf("%s: %q (cap %d), want %q", tc.name, b, cap(b), tc.want)
		}
	}
}
