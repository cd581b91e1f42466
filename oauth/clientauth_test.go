package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Issue 23 point 7: the endpoint authenticates the client once, as the grant's
// ClientAuth says, after the grant's Check and before its Handle: a request the grant
// refuses on its parameters reaches no authenticator, and a request whose client did
// not authenticate reaches no Handle. A present but bad credential is final, and the
// grant's Refused names a credential it never accepts.
func TestEndpointAuthenticatesOnce(t *testing.T) {
	g := &fakeGrant{name: "g", grantType: "urn:g"}
	fa := &fakeAuth{grant: g}
	// A second method whose credential is the same: never tried once the first decided.
	never := &fakeAuth{}
	g.auth = &ClientAuth{Authenticators: []Authenticator{fa, second{never}}, Missing: "no fake credential"}
	fb := &fakeGrant{name: "fallback", check: At(StageRequest, errcode.New(errcode.UnsupportedGrantType, "nobody serves it"))}
	var obs records
	ep, err := NewEndpoint(EndpointConfig{Fallback: fb, Handlers: []Handler{g}, Observer: &obs})
	if err != nil {
		t.Fatal(err)
	}
	post := func(body, cred string) (*httptest.ResponseRecorder, map[string]any) {
		t.Helper()
		g.steps, g.client = nil, nil
		req := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cred != "" {
			req.Header.Set("X-Fake", cred)
		}
		rec := httptest.NewRecorder()
		ep.ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec, m
	}

	// Issued: Check, then one authentication, then Handle with the client.
	if rec, m := post("grant_type=urn:g", "good"); rec.Code != 200 || m["access_token"] != "g" {
		t.Fatalf("issued: %d %v", rec.Code, m)
	}
	if want := []string{"check", "authenticate", "handle"}; !slices.Equal(g.steps, want) {
		t.Fatalf("steps %v, want %v", g.steps, want)
	}
	if g.client == nil || g.client.ID.String() != fakeClient {
		t.Fatalf("Handle was given client %+v", g.client)
	}
	if r := obs[len(obs)-1]; r.Method != "m" || r.Requester != fakeClient {
		t.Fatalf("record: method %q requester %q", r.Method, r.Requester)
	}

	// The grant's parameter rules come first: a refused request reaches no
	// authenticator, whatever its credential.
	g.check = At(StageRequest, errcode.New(errcode.InvalidRequest, "a parameter is missing"))
	tried := fa.tried
	if rec, m := post("grant_type=urn:g", "bad"); rec.Code != 400 || m["error"] != ErrInvalidRequest {
		t.Fatalf("check: %d %v", rec.Code, m)
	}
	if fa.tried != tried || !slices.Equal(g.steps, []string{"check"}) {
		t.Fatalf("a request its grant refused was authenticated: steps %v", g.steps)
	}
	g.check = nil

	// No credential: invalid_client in the grant's words, no Handle.
	if rec, m := post("grant_type=urn:g", ""); rec.Code != 401 || m["error"] != ErrInvalidClient ||
		m["code"] != string(errcode.Unauthenticated) || m["error_description"] != "no fake credential" {
		t.Fatalf("none: %d %v", rec.Code, m)
	}
	if !slices.Equal(g.steps, []string{"check"}) {
		t.Fatalf("steps %v", g.steps)
	}

	// A bad credential is final: invalid_client, no other method tried, no Handle.
	if rec, m := post("grant_type=urn:g", "bad"); rec.Code != 401 || m["error"] != ErrInvalidClient || m["code"] != string(errcode.InvalidSignature) {
		t.Fatalf("bad: %d %v", rec.Code, m)
	}
	if never.tried != 0 || !slices.Equal(g.steps, []string{"check", "authenticate"}) {
		t.Fatalf("after a bad credential: other method tried %d times, steps %v", never.tried, g.steps)
	}

	// Refused names a credential the grant never accepts, told whether one it accepts
	// was present; it is not asked on the path that issues.
	var asked []bool
	g.auth.Refused = func(_ *http.Request, _ *TokenRequest, present bool) error {
		asked = append(asked, present)
		return errcode.New(errcode.TxnTokenNotCredential, "never a credential")
	}
	for _, cred := range []string{"", "bad"} {
		if rec, m := post("grant_type=urn:g", cred); rec.Code != 401 || m["code"] != string(errcode.TxnTokenNotCredential) {
			t.Fatalf("refused %q: %d %v", cred, rec.Code, m)
		}
	}
	if rec, _ := post("grant_type=urn:g", "good"); rec.Code != 200 {
		t.Fatalf("refused on the path that issues: %d", rec.Code)
	}
	if !slices.Equal(asked, []bool{false, true}) {
		t.Fatalf("Refused asked with %v, want [false true]", asked)
	}

	// What no grant serves is refused by the fallback's Check, unauthenticated.
	if rec, m := post("grant_type=password", "good"); rec.Code != 400 || m["error"] != ErrUnsupportedGrantType {
		t.Fatalf("fallback: %d %v", rec.Code, m)
	}
	if fb.served != 0 || !slices.Equal(fb.steps, []string{"check"}) {
		t.Fatalf("fallback steps %v", fb.steps)
	}
}

// second is another method with fakeAuth's credential.
type second struct{ *fakeAuth }

func (second) Name() string { return "second" }

// An endpoint never serves a grant whose clients do not authenticate: NewEndpoint
// refuses a handler, fallback included, without a client authentication method.
func TestEndpointRequiresClientAuth(t *testing.T) {
	ok := &fakeGrant{name: "ok", grantType: "urn:ok"}
	noAuth := &nilAuthGrant{fakeGrant{name: "none", grantType: "urn:none"}}
	empty := &fakeGrant{name: "empty", grantType: "urn:empty", auth: &ClientAuth{Missing: "x"}}
	for _, cfg := range []EndpointConfig{
		{Fallback: ok, Handlers: []Handler{noAuth}},
		{Fallback: ok, Handlers: []Handler{empty}},
		{Fallback: noAuth},
		{Fallback: empty, Handlers: []Handler{ok}},
	} {
		if _, err := NewEndpoint(cfg); err == nil || !strings.Contains(err.Error(), "no client authentication") {
			t.Fatalf("%s/%v: %v", cfg.Fallback.Name(), cfg.Handlers, err)
		}
	}
	if _, err := NewEndpoint(EndpointConfig{Fallback: ok}); err != nil {
		t.Fatal(err)
	}
}

// nilAuthGrant says no client authentication at all.
type nilAuthGrant struct{ fakeGrant }

func (*nilAuthGrant) ClientAuth() *ClientAuth { return nil }
