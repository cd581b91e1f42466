package tts

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// oauth.md 1.4 (TT section 13.3): a refresh token is never a subject token.
func TestTT1_4_RefreshTokenRefused(t *testing.T) {
	e := newEnv(t)
	status, _, body := e.rawPost(e.workload("/agent/a1"), baseForm(tdA, "trip.read", "opaque-refresh-token", TokenTypeRefreshToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.UnsupportedTokenType)
}

// oauth.md 1.4: an unknown subject token type is refused, and so is one this TTS does
// not handle (SAML).
func TestTT1_4_UnknownTypeRefused(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	for _, typ := range []string{"urn:example:custom", TokenTypeSAML2} {
		status, _, body := e.rawPost(w, baseForm(tdA, "trip.read", "x", typ), nil)
		wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.UnsupportedTokenType)
	}
}

// oauth.md 1.4: access tokens of configured issuers (keys by kid, typ at+jwt); a token
// of another issuer, or with the wrong typ, is refused.
func TestTT1_4_AccessTokenOfConfiguredIssuer(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	_, c := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read trip.book", 0), SubjectTokenType: TokenTypeAccessToken})
	if c.Sub != "alice" || c.Scope != "trip.read" {
		t.Fatalf("claims %+v", c)
	}
	now := e.clock.Now()
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Hour).Unix())
	foreign, _ := jose.SignClaims("at+jwt", e.idpKey, true, map[string]any{"iss": "https://evil.example", "sub": "alice", "scope": "trip.read", "iat": iat, "exp": exp})
	_, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: foreign, SubjectTokenType: TokenTypeAccessToken})
	wantCode(t, err, errcode.UntrustedIssuer)
	untyped, _ := jose.SignClaims("JWT", e.idpKey, true, map[string]any{"iss": idpIss, "sub": "alice", "scope": "trip.read", "iat": iat, "exp": exp})
	_, err = e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: untyped, SubjectTokenType: TokenTypeAccessToken})
	wantCode(t, err, errcode.WrongType)
}

// oauth.md 1.4: ID tokens of configured issuers; their scope comes from configuration.
func TestTT1_4_IDToken(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Hour).Unix())
	idt, _ := jose.SignClaims("JWT", e.idpKey, true, map[string]any{"iss": idpIss, "sub": "alice", "aud": "web", "iat": iat, "exp": exp})
	_, c := e.mustRequest(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "profile.read", SubjectToken: idt, SubjectTokenType: TokenTypeIDToken})
	if c.Sub != "alice" || c.Scope != "profile.read" {
		t.Fatalf("claims %+v", c)
	}
}

// oauth.md 1.4: a self_signed token's iss must be the authenticated workload.
func TestTT1_4_SelfSignedIssNotCaller(t *testing.T) {
	e := newEnv(t)
	caller, other := e.workload("/agent/a1"), e.workload("/agent/a2")
	// Signed by the other workload with its own key, naming itself: a subject vouched
	// for by someone else.
	tok := e.selfSigned(other, "alice", "trip.read")
	_, err := e.request(caller, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeSelfSigned})
	wantCode(t, err, errcode.IssuerMismatch)
	// Naming the caller as iss but signed with another key.
	forged, _ := txntoken.NewSelfSignedToken(other.Key, caller.ID, "alice", e.url, "trip.read", time.Minute, e.clock.Now())
	_, err = e.request(caller, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: forged, SubjectTokenType: TokenTypeSelfSigned})
	wantCode(t, err, errcode.InvalidSignature)
	// The genuine one works.
	_, c := e.mustRequest(caller, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.selfSigned(caller, "alice", "trip.read"), SubjectTokenType: TokenTypeSelfSigned})
	if c.Sub != "alice" || c.ReqWL != caller.ID.String() {
		t.Fatalf("claims %+v", c)
	}
}

// oauth.md 1.4: a self_signed token's aud must be this TTS, and it needs iat and exp.
func TestTT1_4_SelfSignedAudienceAndTimes(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	tok, _ := txntoken.NewSelfSignedToken(w.Key, w.ID, "alice", "https://other-tts.example", "trip.read", time.Minute, e.clock.Now())
	_, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeSelfSigned})
	wantCode(t, err, errcode.AudienceMismatch)
	noIat, _ := jose.SignClaims("JWT", w.Key, false, map[string]any{"iss": w.ID.String(), "sub": "alice", "aud": e.url, "exp": e.clock.Now().Unix() + 60, "scope": "trip.read"})
	_, err = e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: noIat, SubjectTokenType: TokenTypeSelfSigned})
	wantCode(t, err, errcode.MissingClaim)
	old, _ := txntoken.NewSelfSignedToken(w.Key, w.ID, "alice", e.url, "trip.read", time.Hour, e.clock.Now().Add(-30*time.Minute))
	_, err = e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: old, SubjectTokenType: TokenTypeSelfSigned})
	wantCode(t, err, errcode.TooOld)
}

// oauth.md 1.4: unsigned_json only from workloads policy allows (the edge gateway).
func TestTT1_4_UnsignedJSONOnlyFromAllowedWorkloads(t *testing.T) {
	e := newEnv(t)
	subject := `{"sub":"alice","scope":"trip.read trip.book"}`
	_, err := e.request(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: subject, SubjectTokenType: TokenTypeUnsignedJSON})
	wantCode(t, err, errcode.WorkloadNotAllowed)
	status, _, body := e.rawPost(e.workload("/agent/a1"), baseForm(tdA, "trip.read", subject, TokenTypeUnsignedJSON), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)

	_, c := e.mustRequest(e.workload("/edge-gateway"), txntoken.Request{Audience: tdA, Scope: "trip.book", SubjectToken: subject, SubjectTokenType: TokenTypeUnsignedJSON})
	if c.Sub != "alice" || c.Scope != "trip.book" {
		t.Fatalf("claims %+v", c)
	}
	_, err = e.request(e.workload("/edge-gateway"), txntoken.Request{Audience: tdA, Scope: "trip.book", SubjectToken: `{"scope":"trip.book"}`, SubjectTokenType: TokenTypeUnsignedJSON})
	wantCode(t, err, errcode.MissingClaim)
}

// oauth.md 1.5 step 1: a workload no policy rule names is unauthorized_client.
func TestTT1_5_Step1_WorkloadNotInPolicy(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Policy.Rules = c.Policy.Rules[1:] })
	status, _, body := e.rawPost(e.workload("/agent/a1"), baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)
}

// oauth.md 1.5 step 2: the subject token's signature is verified.
func TestTT1_5_Step2_SubjectSignatureVerified(t *testing.T) {
	e := newEnv(t)
	tok := e.accessToken("alice", "trip.read", 0)
	i := strings.LastIndexByte(tok, '.')
	bad := tok[:i+1] + strings.Repeat("A", len(tok)-i-1)
	status, _, body := e.rawPost(e.workload("/agent/a1"), baseForm(tdA, "trip.read", bad, TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.InvalidSignature)
}

// oauth.md 1.5 step 3: never issue on an expired subject token, also when the token
// was validated (and cached) while it was still valid.
func TestTT1_5_Step3_ExpiredSubjectToken(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	tok := e.accessToken("alice", "trip.read", 2*time.Minute)
	e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeAccessToken})
	e.clock.Advance(3 * time.Minute)
	status, _, body := e.rawPost(w, baseForm(tdA, "trip.read", tok, TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.Expired)
	// Never seen before and already expired.
	old := e.accessToken("bob", "trip.read", -time.Hour)
	_, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: old, SubjectTokenType: TokenTypeAccessToken})
	wantCode(t, err, errcode.Expired)
	// A self_signed token too.
	ss, _ := txntoken.NewSelfSignedToken(w.Key, w.ID, "alice", e.url, "trip.read", time.Minute, e.clock.Now().Add(-2*time.Minute))
	_, err = e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: ss, SubjectTokenType: TokenTypeSelfSigned})
	wantCode(t, err, errcode.Expired)
}

// oauth.md 1.5 step 4: the granted scope is never broader than the subject token's.
func TestTT1_5_Step4_ScopeNeverWiderThanSubject(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	tok := e.accessToken("alice", "trip.read", 0)
	status, _, body := e.rawPost(w, baseForm(tdA, "trip.read trip.book", tok, TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidScope, errcode.ScopeTooBroad)
	// Policy narrows further: this workload may only ask for trip.read.
	scoped := e.workload("/agent/scoped")
	_, err := e.request(scoped, txntoken.Request{Audience: tdA, Scope: "trip.book", SubjectToken: e.accessToken("alice", "trip.read trip.book", 0), SubjectTokenType: TokenTypeAccessToken})
	wantCode(t, err, errcode.ScopeTooBroad)
}

// oauth.md 1.5 step 4 (TT section 13.14): a subject whose scope cannot be determined is
// refused, never treated as unconstrained.
func TestTT1_5_Step4_UnknownSubjectScope(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	status, _, body := e.rawPost(w, baseForm(tdA, "trip.read", e.accessToken("alice", "", 0), TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidScope, errcode.ScopeUnknown)
	_, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.selfSigned(w, "alice", ""), SubjectTokenType: TokenTypeSelfSigned})
	wantCode(t, err, errcode.ScopeUnknown)
	// Where policy says what a workload-asserted subject may do, that is the scope.
	ss := e.workload("/agent/selfscope")
	_, c := e.mustRequest(ss, txntoken.Request{Audience: tdA, Scope: "trip.book", SubjectToken: e.selfSigned(ss, "alice", ""), SubjectTokenType: TokenTypeSelfSigned})
	if c.Scope != "trip.book" {
		t.Fatal(c.Scope)
	}
}

// oauth.md 1.5 step 5: sub is unique in the trust domain: issuers whose subjects live in
// different namespaces are told apart by a configured prefix.
func TestTT1_5_Step5_SubjectUniqueInTrustDomain(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		h := c.SubjectHandlers[0].(*JWTHandler)
		is := h.issuers[idpIss]
		is.SubjectPrefix = "idp.a.example/"
		h.issuers[idpIss] = is
	})
	_, c := e.mustRequest(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken})
	if c.Sub != "idp.a.example/alice" {
		t.Fatal(c.Sub)
	}
}

// oauth.md 1.5 step 6: iat is the issue time, exp set, aud the requested trust domain,
// txn unique per transaction.
func TestTT1_5_Step6_TimesAudienceTxn(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/multi")
	tok := e.accessToken("alice", "trip.read", 0)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		_, c := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeAccessToken})
		if int64(*c.Iat) != e.clock.Now().Unix() || int64(*c.Exp) != e.clock.Now().Add(DefaultLifetime).Unix() || c.Aud[0] != tdA || seen[c.Txn] {
			t.Fatalf("claims %+v", c)
		}
		seen[c.Txn] = true
	}
	// A TTS serving two trust domains picks the one requested.
	resp, err := e.request(w, txntoken.Request{Audience: tdB, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeAccessToken})
	if err != nil {
		t.Fatal(err)
	}
	if c := e.verify(resp.AccessToken, tdB); len(c.Aud) != 1 || c.Aud[0] != tdB {
		t.Fatalf("aud %v", c.Aud)
	}
}

// oauth.md 1.5 step 7: the scope claim is derived from the requested scope (within the
// subject's), not copied from the subject token.
func TestTT1_5_Step7_ScopeDerivedFromRequest(t *testing.T) {
	e := newEnv(t)
	resp, c := e.mustRequest(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read trip.book admin", 0), SubjectTokenType: TokenTypeAccessToken})
	if c.Scope != "trip.read" || resp.Scope != "trip.read" {
		t.Fatalf("scope %q / %q", c.Scope, resp.Scope)
	}
}

// oauth.md 1.5 step 8: the TTS is authoritative over context: request_details.dlg
// becomes tctx.dlg, other members enter tctx only as policy allows, and rctx values
// such as req_ip are taken only from the workloads policy names (the edge gateway).
func TestTT1_5_Step8_ContextByPolicy(t *testing.T) {
	e := newEnv(t)
	at := e.accessToken("alice", "trip.read", 0)
	details := map[string]any{"purpose": "book", "admin": true}
	ctxv := map[string]any{"req_ip": "192.0.2.7", "authn": "face", "transport": "h2"}
	_, c := e.mustRequest(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: at, SubjectTokenType: TokenTypeAccessToken,
		Dialog: "D1", Details: details, Context: ctxv})
	if c.Dialog() != "D1" || c.Tctx["purpose"] != "book" || c.Tctx["admin"] != nil || c.Rctx != nil {
		t.Fatalf("an ordinary workload: tctx %v rctx %v", c.Tctx, c.Rctx)
	}
	_, c = e.mustRequest(e.workload("/edge-gateway"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: at, SubjectTokenType: TokenTypeAccessToken, Context: ctxv})
	if c.Rctx["req_ip"] != "192.0.2.7" || c.Rctx["authn"] != "face" || c.Rctx["transport"] != nil {
		t.Fatalf("the gateway: rctx %v", c.Rctx)
	}
	// request_details cannot assert sub, txn or aud.
	_, err := e.request(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: at, SubjectTokenType: TokenTypeAccessToken, Details: map[string]any{"sub": "admin"}})
	wantCode(t, err, errcode.InvalidRequest)
}

// oauth.md 1.5 step 9: the inbound token is never embedded.
func TestTT1_5_Step9_InboundTokenNotEmbedded(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	at := e.accessToken("alice", "trip.read", 0)
	resp, _ := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: at, SubjectTokenType: TokenTypeAccessToken, Dialog: "D1"})
	tok, _ := jose.Parse(resp.AccessToken, 0)
	sig := at[strings.LastIndexByte(at, '.')+1:]
	if strings.Contains(string(tok.Payload), sig) || strings.Contains(string(tok.Payload), at[:40]) {
		t.Fatal("the Txn-Token carries the access token")
	}
	_, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: at, SubjectTokenType: TokenTypeAccessToken, Details: map[string]any{"purpose": at}})
	wantCode(t, err, errcode.InvalidRequest)
}

// oauth.md 1.5 step 10: exp is capped at the subject token's expiry unless policy
// allows more.
func TestTT1_5_Step10_LifetimeWithinSubject(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	tok := e.accessToken("alice", "trip.read", time.Minute)
	resp, c := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeAccessToken})
	if int64(*c.Exp) != e.clock.Now().Add(time.Minute).Unix() || resp.ExpiresIn != 60 {
		t.Fatalf("exp %d expires_in %d", *c.Exp, resp.ExpiresIn)
	}
	e2 := newEnv(t, func(c *Config) { c.Policy.BeyondSubjectExpiry = true })
	_, c = e2.mustRequest(e2.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e2.accessToken("alice", "trip.read", time.Minute), SubjectTokenType: TokenTypeAccessToken})
	if int64(*c.Exp) != e2.clock.Now().Add(DefaultLifetime).Unix() {
		t.Fatalf("exp %d", *c.Exp)
	}
}
