package tts

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// oauth.md 1.3: every REQUIRED parameter, in a fixed order.
func TestTT1_3_RequiredParameters(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	at := e.accessToken("alice", "trip.read", 0)
	for _, name := range []string{"grant_type", "requested_token_type", "audience", "scope", "subject_token", "subject_token_type"} {
		t.Run(name, func(t *testing.T) {
			f := baseForm(tdA, "trip.read", at, TokenTypeAccessToken)
			f.Del(name)
			status, _, body := e.rawPost(w, f, nil)
			wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.InvalidRequest)
		})
	}
}

// oauth.md 1.3 and 1.11: grant_type token-exchange, else unsupported_grant_type.
func TestTT1_11_WrongGrantType(t *testing.T) {
	e := newEnv(t)
	f := baseForm(tdA, "trip.read", "x", TokenTypeAccessToken)
	f.Set("grant_type", "client_credentials")
	status, _, body := e.rawPost(e.workload("/agent/a1"), f, nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrUnsupportedGrantType, errcode.UnsupportedGrantType)
}

// oauth.md 1.3 and 1.11: requested_token_type must be txn_token (the -08 typo is
// accepted from -08 peers, oauth.md 1.1).
func TestTT1_11_WrongRequestedTokenType(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	f.Set("requested_token_type", TokenTypeAccessToken)
	status, _, body := e.rawPost(w, f, nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.UnsupportedTokenType)

	f.Set("requested_token_type", TokenTypeTxnToken08)
	if status, _, body := e.rawPost(w, f, nil); status != http.StatusOK {
		t.Fatalf("-08 requested_token_type refused: %d %s", status, body)
	}
}

// oauth.md 1.3: request_context and request_details are JSON objects in plain text;
// RFC 6749 section 3.2: no parameter twice; actor_token and resource are refused.
func TestTT1_3_ParameterSyntax(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	at := e.accessToken("alice", "trip.read", 0)
	for name, mutate := range map[string]func(url.Values){
		"details not an object": func(f url.Values) { f.Set("request_details", `["x"]`) },
		"details base64url":     func(f url.Values) { f.Set("request_details", "eyJkbGciOiJEMSJ9") },
		"context not JSON":      func(f url.Values) { f.Set("request_context", `{"req_ip":`) },
		"dlg not a string":      func(f url.Values) { f.Set("request_details", `{"dlg":7}`) },
		"dlg with a space":      func(f url.Values) { f.Set("request_details", `{"dlg":"a b"}`) },
		"audience twice":        func(f url.Values) { f.Add("audience", tdB) },
		"actor_token":           func(f url.Values) { f.Set("actor_token", "x") },
		"resource":              func(f url.Values) { f.Set("resource", "https://api.a.example") },
		"scope with two spaces": func(f url.Values) { f.Set("scope", "trip.read  trip.book") },
		"deep details":          func(f url.Values) { f.Set("request_details", strings.Repeat(`{"a":`, 20)+"1"+strings.Repeat("}", 20)) },
		"big details":           func(f url.Values) { f.Set("request_details", `{"a":"`+strings.Repeat("x", oauth.MaxContextSize)+`"}`) },
	} {
		t.Run(name, func(t *testing.T) {
			f := baseForm(tdA, "trip.read", at, TokenTypeAccessToken)
			mutate(f)
			status, _, body := e.rawPost(w, f, nil)
			wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.InvalidRequest)
		})
	}
	t.Run("not form encoded", func(t *testing.T) {
		status, _, body := e.rawPost(w, baseForm(tdA, "trip.read", at, TokenTypeAccessToken), func(r *http.Request) {
			r.Header.Set("Content-Type", "application/json")
		})
		wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.InvalidRequest)
	})
}

// oauth.md 1.11: an audience that is not a served trust domain is invalid_target; a
// served one that is not the workload's own is unauthorized_client.
func TestTT1_11_AudienceNotServed(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	at := e.accessToken("alice", "trip.read", 0)
	status, _, body := e.rawPost(w, baseForm("c.example", "trip.read", at, TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidTarget, errcode.AudienceNotServed)
	status, _, body = e.rawPost(w, baseForm(tdB, "trip.read", at, TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)
	// The example request of -08 named the audience as a URL; it is not a trust domain.
	status, _, body = e.rawPost(w, baseForm("http://a.example", "trip.read", at, TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidTarget, errcode.AudienceNotServed)
}

// oauth.md 1.11: the whole mapping, each row with the status, the OAuth error and the
// dialogtrust code in one document.
func TestTT1_11_ErrorMapping(t *testing.T) {
	for _, c := range []struct {
		err    error
		oauth  string
		status int
	}{
		{at(stageSubject, errcode.New(errcode.Expired, "")), oauth.ErrInvalidRequest, 400},
		{at(stageSubject, errcode.New(errcode.UnsupportedTokenType, "")), oauth.ErrInvalidRequest, 400},
		{at(stageRequest, errcode.New(errcode.InvalidRequest, "")), oauth.ErrInvalidRequest, 400},
		{at(stageRequest, errcode.New(errcode.AudienceNotServed, "")), oauth.ErrInvalidTarget, 400},
		{at(stageScope, errcode.New(errcode.ScopeTooBroad, "")), oauth.ErrInvalidScope, 400},
		{at(stageScope, errcode.New(errcode.ScopeUnknown, "")), oauth.ErrInvalidScope, 400},
		{at(stageClient, errcode.New(errcode.Expired, "")), oauth.ErrInvalidClient, 401},
		{at(stageClient, errcode.New(errcode.Replayed, "")), oauth.ErrInvalidClient, 401},
		{at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "")), oauth.ErrUnauthorizedClient, 400},
		{at(stageRequest, errcode.New(errcode.UnsupportedGrantType, "")), oauth.ErrUnsupportedGrantType, 400},
		{at(stageClient, errcode.Unavailable(errcode.KeysUnavailable, nil, "")), oauth.ErrTemporarilyUnavailable, 503},
		{at(stageIssue, errcode.New(errcode.Internal, "")), oauth.ErrServerError, 500},
	} {
		oauth, status := oauth.ErrorFor(c.err)
		if oauth != c.oauth || status != c.status {
			t.Errorf("%v: got %s %d, want %s %d", c.err, oauth, status, c.oauth, c.status)
		}
	}
}

// RFC 6749 section 5.2: invalid_client with the Authorization field used answers 401
// with a WWW-Authenticate challenge of that scheme; the body has error, the code and
// the kind, and is never cached.
func TestTT1_11_InvalidClientDocument(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	other := e.workload("/agent/a2")
	f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	status, h, body := e.rawPost(w, f, func(r *http.Request) {
		r.Header.Set("Workload-Identity-Token", other.WIT) // the proof was made for w's WIT
	})
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.InvalidSignature)
	if !strings.HasPrefix(h.Get("WWW-Authenticate"), "WPT") || h.Get("Cache-Control") != "no-store" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", h)
	}
	status, _, body = e.rawPost(nil, f, nil)
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.Unauthenticated)
}

// oauth.md 1.11 and the design: a key source that cannot be read is "could not be
// completed" (503, temporarily_unavailable, kind could_not_complete), never acceptance.
func TestTT1_11_KeysUnavailable(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		lazy := keys.NewLazyRemoteSet(t.Context(), "http://"+freeAddr(t)+"/jwks.json", 0, nil)
		c.SubjectHandlers[0], _ = NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: idpIss, Keys: lazy}}, HandlerOptions{})
	})
	status, _, body := e.rawPost(e.workload("/agent/a1"), baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusServiceUnavailable, oauth.ErrTemporarilyUnavailable, errcode.KeysUnavailable)
	if !strings.Contains(string(body), `"kind":"could_not_complete"`) {
		t.Fatalf("kind missing: %s", body)
	}
}
