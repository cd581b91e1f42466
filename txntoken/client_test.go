package txntoken

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// fakeTTS records the last form it received and answers with status and body.
type fakeTTS struct {
	form   url.Values
	proved bool
	status int
	body   string
}

func (f *fakeTTS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.form = r.PostForm
	f.proved = r.Header.Get("Signature") != "" && r.Header.Get("Workload-Identity-Token") != ""
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	_, _ = io.WriteString(w, f.body)
}

func newClient(t *testing.T, endpoint string) *Client {
	t.Helper()
	key, err := keys.Generate(keys.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{TokenEndpoint: endpoint, WIT: "h.p.s", Key: key}
}

const txnTokenResponse = `{"access_token":"txn.token.sig","issued_token_type":"urn:ietf:params:oauth:token-type:txn_token","token_type":"N_A","expires_in":300,"scope":"trip.read"}`

// The request is an RFC 8693 token exchange for a Txn-Token (oauth.md 1.3) whose
// request_details carries the dialog (dialog-binding section 10), proved with an HTTP
// signature by default.
func TestClientRequestForm(t *testing.T) {
	tts := &fakeTTS{status: 200, body: txnTokenResponse}
	srv := httptest.NewServer(tts)
	defer srv.Close()
	c := newClient(t, srv.URL+"/token")
	details := map[string]any{"purpose": "trip"}
	res, err := c.Request(context.Background(), Request{Audience: "a.example", Scope: "trip.read", SubjectToken: "subject",
		SubjectTokenType: oauth.TokenTypeSelfSigned, Dialog: "D1", Details: details, Context: map[string]any{"req_ip": "192.0.2.1"}})
	if err != nil || res.AccessToken != "txn.token.sig" || res.ExpiresIn != 300 {
		t.Fatalf("%v %+v", err, res)
	}
	f := tts.form
	for name, want := range map[string]string{
		"grant_type": oauth.GrantTypeTokenExchange, "requested_token_type": oauth.TokenTypeTxnToken,
		"audience": "a.example", "scope": "trip.read", "subject_token": "subject", "subject_token_type": oauth.TokenTypeSelfSigned,
		"request_context": `{"req_ip":"192.0.2.1"}`,
	} {
		if got := f.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	var rd map[string]any
	if err := json.Unmarshal([]byte(f.Get("request_details")), &rd); err != nil || rd["dlg"] != "D1" || rd["purpose"] != "trip" || len(rd) != 2 {
		t.Errorf("request_details %q: %v", f.Get("request_details"), err)
	}
	if _, ok := details["dlg"]; ok {
		t.Error("the caller's Details were changed")
	}
	if !tts.proved {
		t.Error("the request carries no HTTP signature and WIT")
	}
	// Without a dialog, details or context those members are absent.
	if _, err := c.Request(context.Background(), Request{Audience: "a.example", Scope: "trip.read", SubjectToken: "s", SubjectTokenType: oauth.TokenTypeSelfSigned}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tts.form["request_details"]; ok {
		t.Error("request_details sent without a dialog or details")
	}
	if _, ok := tts.form["request_context"]; ok {
		t.Error("request_context sent without a context")
	}
}

// Only a Txn-Token is accepted as the answer; refusals keep the TTS's code, and a TTS
// that cannot be reached or fails without our code is tts_unavailable.
func TestClientResponseCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   errcode.Code
		kind   errcode.Kind
	}{
		{"not a Txn-Token", 200, `{"access_token":"at","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"N_A"}`, errcode.UnsupportedTokenType, errcode.Failed},
		{"a bearer token", 200, `{"access_token":"at","issued_token_type":"urn:ietf:params:oauth:token-type:txn_token","token_type":"Bearer"}`, errcode.UnsupportedTokenType, errcode.Failed},
		{"no token", 200, `{"issued_token_type":"urn:ietf:params:oauth:token-type:txn_token","token_type":"N_A"}`, errcode.InvalidEncoding, errcode.Failed},
		{"the TTS's refusal", 400, `{"error":"invalid_scope","code":"scope_too_broad","kind":"failed"}`, errcode.ScopeTooBroad, errcode.Failed},
		{"the TTS cannot complete", 503, `{"error":"temporarily_unavailable","code":"keys_unavailable","kind":"could_not_complete"}`, errcode.KeysUnavailable, errcode.Incomplete},
		{"a proxy's 502", 502, `<html>bad gateway</html>`, errcode.TTSUnavailable, errcode.Incomplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeTTS{status: tc.status, body: tc.body})
			defer srv.Close()
			_, err := newClient(t, srv.URL+"/token").Request(context.Background(), Request{Audience: "a.example", Scope: "s", SubjectToken: "s", SubjectTokenType: oauth.TokenTypeSelfSigned})
			if errcode.CodeOf(err) != tc.code || errcode.KindOf(err) != tc.kind {
				t.Fatalf("%v, want %s (%s)", err, tc.code, tc.kind)
			}
		})
	}
	down := newClient(t, "http://tts.invalid/token")
	down.HTTPClient = &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) { return nil, errors.New("no route") })}
	_, err := down.Request(context.Background(), Request{Audience: "a.example"})
	if errcode.CodeOf(err) != errcode.TTSUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("unreachable TTS: %v", err)
	}
	_, err = (&Client{}).Request(context.Background(), Request{})
	if errcode.CodeOf(err) != errcode.InvalidRequest {
		t.Fatalf("no token endpoint: %v", err)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A self_signed subject token (oauth.md 1.4) is signed by the workload's key and names
// the workload, the subject and the TTS.
func TestNewSelfSignedToken(t *testing.T) {
	key, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	id, err := identifier.Parse("wimse://a.example/agent/a1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		scope    string
		lifetime time.Duration
		exp      int64
	}{{"trip.read", time.Minute, 60}, {"", 0, 300}} {
		raw, err := NewSelfSignedToken(key, id, "alice@a.example", "https://tts.a.example", tc.scope, tc.lifetime, now)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jose.Parse(raw, 8<<10)
		if err != nil {
			t.Fatal(err)
		}
		if err := tok.VerifyWith(key.Public(), true); err != nil || tok.Typ != "JWT" {
			t.Fatalf("typ %q: %v", tok.Typ, err)
		}
		var c map[string]any
		if err := json.Unmarshal(tok.Payload, &c); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"iss": "wimse://a.example/agent/a1", "sub": "alice@a.example", "aud": "https://tts.a.example",
			"iat": float64(now.Unix()), "exp": float64(now.Unix() + tc.exp)}
		if tc.scope != "" {
			want["scope"] = tc.scope
		}
		if len(c) != len(want) {
			t.Fatalf("claims %v, want %v", c, want)
		}
		for k, v := range want {
			if c[k] != v {
				t.Fatalf("%s = %v, want %v (claims %v)", k, c[k], v, c)
			}
		}
	}
}
