package tts

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// RFC 8414 metadata (oauth.md 5.2, Q3): issuer, token endpoint, JWKS, grant types and
// authentication methods; oauth.Discover checks it.
func TestTT1_12_MetadataAndDiscover(t *testing.T) {
	e := newEnv(t)
	status, body := testkit.Get(t, e.url+PathMetadata)
	var md oauth.Metadata
	if status != 200 || json.Unmarshal(body, &md) != nil {
		t.Fatalf("%d %s", status, body)
	}
	if md.Issuer != e.url || md.TokenEndpoint != e.url+PathToken || md.JWKSURI != e.url+PathJWKS ||
		len(md.GrantTypesSupported) != 1 || md.GrantTypesSupported[0] != GrantTypeTokenExchange ||
		strings.Join(md.TokenEndpointAuthMethodsSupported, " ") != "wit_httpsig wit_wpt private_key_jwt" {
		t.Fatalf("metadata %+v", md)
	}
	if strings.Contains(string(body), "response_types_supported") {
		t.Fatal("response_types_supported should be omitted (Q6)")
	}
	got, err := oauth.Discover(t.Context(), nil, e.url)
	if err != nil || got.TokenEndpoint != md.TokenEndpoint {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := oauth.Discover(t.Context(), nil, strings.Replace(e.url, "127.0.0.1", "localhost", 1)); errcode.CodeOf(err) != errcode.IssuerMismatch {
		t.Fatalf("metadata of another issuer accepted: %v", err)
	}
	status, body = testkit.Get(t, e.url+PathJWKS)
	set, err := keys.ParseJWKS(body)
	if status != 200 || err != nil || len(set.Keys()) != 1 || set.Keys()[0].KID() != e.ttsKey.KID() {
		t.Fatalf("%d %s %v", status, body, err)
	}
}

type failingStore struct{}

func (failingStore) Claim(context.Context, string, time.Duration) error {
	return errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "store")
}
func (failingStore) Ping(context.Context) error { return errors.New("down") }

// Health, readiness (the replay store's Ping and extra checks), and a store that does
// not answer: could not be completed, 503, never acceptance.
func TestHealthReadinessAndStoreDown(t *testing.T) {
	e := newEnv(t)
	if s, _ := testkit.Get(t, e.url+PathHealthz); s != 200 {
		t.Fatal(s)
	}
	if s, b := testkit.Get(t, e.url+PathReadyz); s != 200 {
		t.Fatalf("%d %s", s, b)
	}
	down := newEnv(t, func(e *env, c *Config) {
		c.Replay = failingStore{}
		c.Authenticators = oauth.WIMSEAuthenticators(e.wits, failingStore{}, c.Issuer+PathToken)
	})
	if s, b := testkit.Get(t, down.url+PathReadyz); s != 503 || !strings.Contains(string(b), "store_unavailable") {
		t.Fatalf("%d %s", s, b)
	}
	status, _, body := down.rawPost(down.workload("/agent/a1"), baseForm(tdA, "trip.read", down.accessToken("alice", "trip.read", 0), TokenTypeAccessToken), nil)
	wantOAuth(t, status, body, http.StatusServiceUnavailable, oauth.ErrTemporarilyUnavailable, errcode.StoreUnavailable)
}

// Metrics by grant, subject token type and error code; logs carry token hashes only.
func TestTT1_12_MetricsAndLogsWithHashesOnly(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	at := e.accessToken("alice", "trip.read", 0)
	resp, _ := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: at, SubjectTokenType: TokenTypeAccessToken, Dialog: "D1"})
	_, _ = e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: resp.AccessToken, SubjectTokenType: TokenTypeTxnToken})
	_, _ = e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: "r", SubjectTokenType: TokenTypeRefreshToken})
	_, b := testkit.Get(t, e.url+PathMetrics)
	for _, want := range []string{
		`dialogtrust_tts_issued_total{grant="token_exchange",method="wit_wpt",subject_token_type="access_token"} 1`,
		`dialogtrust_tts_issued_total{grant="replacement",method="wit_wpt",subject_token_type="txn_token"} 1`,
		`dialogtrust_tts_refused_total{code="unsupported_token_type",error="invalid_request",grant="token_exchange",subject_token_type="refresh_token"} 1`,
		`dialogtrust_tts_subject_cache_entries 1`,
		`dialogtrust_tts_request_duration_seconds_count 3`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	logs := e.logs.String()
	for _, secret := range []string{at, resp.AccessToken, w.WIT, at[strings.LastIndexByte(at, '.'):], resp.AccessToken[strings.LastIndexByte(resp.AccessToken, '.'):]} {
		if strings.Contains(logs, secret) {
			t.Fatal("a token (or its signature) is in the logs")
		}
	}
	for _, want := range []string{`"txn_token_sha256":"` + tokenhash.Of(resp.AccessToken), `"subject_token_sha256":"` + tokenhash.Of(at), `"code":"unsupported_token_type"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("not a JSON log line: %s", line)
		}
	}
}
