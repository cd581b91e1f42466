package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wpt"
)

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answering is an HTTP client whose every request gets status and body.
func answering(status int, body io.Reader) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		_ = r.Body.Close()
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(body), Request: r}, nil
	})}
}

func testClient(t *testing.T, hc *http.Client) *oauth.TokenClient {
	t.Helper()
	key, err := keys.Generate(keys.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	return &oauth.TokenClient{TokenEndpoint: "https://as.example/token", HTTPClient: hc, WIT: "h.p.s", Key: key}
}

func wantErr(t *testing.T, err error, code errcode.Code, kind errcode.Kind) {
	t.Helper()
	var e *errcode.Error
	if !errors.As(err, &e) || e.Code != code || e.Kind != kind {
		t.Fatalf("got %v, want %s (%s)", err, code, kind)
	}
}

// An error document is read back into the server's code and kind when it carries one
// of ours; a plain RFC 6749 error of a foreign AS, or no error document at all, is
// not given a code it did not send, and a 5xx of that kind is could-not-complete with
// the caller's code.
func TestClientErrorDecoding(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		status      int
		body        string
		unavailable errcode.Code
		code        errcode.Code
		kind        errcode.Kind
		detail      string
	}{
		{"our code", 400, `{"error":"invalid_scope","error_description":"trip.book","code":"scope_too_broad","kind":"failed"}`, "", errcode.ScopeTooBroad, errcode.Failed, "invalid_scope: trip.book"},
		{"our could-not-complete", 503, `{"error":"temporarily_unavailable","code":"store_unavailable","kind":"could_not_complete"}`, errcode.TTSUnavailable, errcode.StoreUnavailable, errcode.Incomplete, "temporarily_unavailable"},
		{"foreign RFC 6749 error", 400, `{"error":"invalid_grant","error_description":"expired"}`, "", errcode.TokenRefused, errcode.Failed, "invalid_grant: expired"},
		{"foreign 5xx error", 500, `{"error":"server_error"}`, errcode.TTSUnavailable, errcode.TTSUnavailable, errcode.Incomplete, "HTTP 500"},
		{"a code not of ours", 400, `{"error":"invalid_request","code":"Not A Code\n"}`, "", errcode.TokenRefused, errcode.Failed, "invalid_request"},
		{"non-JSON 5xx", 502, `<html>bad gateway</html>`, "", errcode.ASUnavailable, errcode.Incomplete, "HTTP 502"},
		{"non-JSON 5xx, TTS", 502, `<html>bad gateway</html>`, errcode.TTSUnavailable, errcode.TTSUnavailable, errcode.Incomplete, "HTTP 502"},
		{"non-JSON 4xx", 404, `not found`, "", errcode.TokenRefused, errcode.Failed, "HTTP 404 without an error document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, answering(tc.status, strings.NewReader(tc.body)))
			c.Unavailable = tc.unavailable
			_, err := c.Token(ctx, url.Values{"grant_type": {oauth.GrantTypeJWTBearer}})
			wantErr(t, err, tc.code, tc.kind)
			if !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("%v does not say %q", err, tc.detail)
			}
		})
	}
}

// countingReader is an endless JSON-looking body that counts what was read of it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n == 0 && len(p) > 0 {
		p[0] = '{'
		r.n++
		return 1, nil
	}
	for i := range p {
		p[i] = ' '
	}
	r.n += len(p)
	return len(p), nil
}

// The client reads no more than its bound of an answer, whatever the server sends: an
// oversize success is invalid_encoding, an oversize error is no error document.
func TestClientBoundedRead(t *testing.T) {
	ctx := context.Background()
	body := &countingReader{}
	_, err := testClient(t, answering(200, body)).Token(ctx, url.Values{})
	wantErr(t, err, errcode.InvalidEncoding, errcode.Failed)
	if body.n > oauth.MaxResponseSize+1 {
		t.Fatalf("read %d bytes of the answer, bound %d", body.n, oauth.MaxResponseSize)
	}
	big := `{"error":"invalid_request","code":"scope_too_broad","error_description":"` + strings.Repeat("x", oauth.MaxResponseSize) + `"}`
	_, err = testClient(t, answering(400, strings.NewReader(big))).Token(ctx, url.Values{})
	wantErr(t, err, errcode.TokenRefused, errcode.Failed)
	// Exactly at the bound is still read.
	fits := `{"access_token":"t","token_type":"N_A"}`
	fits += strings.Repeat(" ", oauth.MaxResponseSize-len(fits))
	tr, err := testClient(t, answering(200, strings.NewReader(fits))).Token(ctx, url.Values{})
	if err != nil || tr.AccessToken != "t" {
		t.Fatalf("%v %+v", err, tr)
	}
}

// No answer, or an answer that breaks off, could not be completed: the caller's code
// (as_unavailable by default).
func TestClientTransportFailure(t *testing.T) {
	ctx := context.Background()
	down := &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })}
	_, err := testClient(t, down).Token(ctx, url.Values{})
	wantErr(t, err, errcode.ASUnavailable, errcode.Incomplete)
	c := testClient(t, down)
	c.Unavailable = errcode.TTSUnavailable
	_, err = c.Token(ctx, url.Values{})
	wantErr(t, err, errcode.TTSUnavailable, errcode.Incomplete)
	_, err = testClient(t, answering(200, io.MultiReader(strings.NewReader(`{"access`), failingReader{}))).Token(ctx, url.Values{})
	wantErr(t, err, errcode.ASUnavailable, errcode.Incomplete)
	_, err = testClient(t, answering(200, strings.NewReader(`[not json`))).Token(ctx, url.Values{})
	wantErr(t, err, errcode.InvalidEncoding, errcode.Failed)
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// Without a credential, a token endpoint or a known proof method nothing is sent.
func TestClientRefusesBeforeSending(t *testing.T) {
	ctx := context.Background()
	sent := false
	hc := &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) {
		sent = true
		return nil, errors.New("unreachable")
	})}
	c := testClient(t, hc)
	c.Key = nil
	_, err := c.Token(ctx, url.Values{})
	wantErr(t, err, errcode.MissingCredential, errcode.Failed)
	c = testClient(t, hc)
	c.TokenEndpoint = ""
	_, err = c.Token(ctx, url.Values{})
	wantErr(t, err, errcode.InvalidRequest, errcode.Failed)
	c = testClient(t, hc)
	c.Proof = proof.Method(7)
	_, err = c.Token(ctx, url.Values{})
	wantErr(t, err, errcode.InvalidRequest, errcode.Failed)
	if sent {
		t.Fatal("a request was sent")
	}
}

// The token request carries the form and a proof a token endpoint verifies: a WIMSE
// HTTP signature by default (covering the form through Content-Digest), or a WPT.
func TestClientProof(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	dom := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	w := dom.Workload(t, "/agent/a1", keys.ES256)
	wits := dom.Validator()
	var endpoint string
	hsv := func() *httpsig.Verifier {
		return httpsig.NewVerifier(wits, httpsig.WithAudiences(endpoint), httpsig.WithReplay(store.NewMemory(store.WithClock(clock.Now))),
			httpsig.WithClock(clock.Now), httpsig.WithRequiredComponents(`"content-digest"`, `"workload-identity-token"`))
	}
	wpv := wpt.NewVerifier(wits, wpt.WithAudiences("https://as.example"), wpt.WithReplay(store.NewMemory(store.WithClock(clock.Now))), wpt.WithClock(clock.Now))
	seen := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var err error
		var method string
		if len(r.Header.Values("Signature")) > 0 {
			method = "httpsig"
			_, err = hsv().VerifyRequest(r.Context(), r)
		} else {
			method = "wpt"
			_, err = wpv.VerifyRequest(r.Context(), r, wpt.RequestOptions{})
		}
		if err == nil {
			err = r.ParseForm()
		}
		if err != nil || r.PostForm.Get("assertion") != "grant" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			seen <- "refused: " + string(errcode.CodeOf(err))
			http.Error(rw, `{"error":"invalid_client","code":"unauthenticated","kind":"failed"}`, http.StatusUnauthorized)
			return
		}
		seen <- method
		rw.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(rw, `{"access_token":"at","token_type":"Bearer","expires_in":60,"scope":"trip.read"}`)
	}))
	defer srv.Close()
	endpoint = srv.URL + "/token"
	form := url.Values{"grant_type": {oauth.GrantTypeJWTBearer}, "assertion": {"grant"}}
	for _, tc := range []struct {
		method proof.Method
		aud    string
	}{{proof.HTTPSig, ""}, {proof.WPT, "https://as.example"}} {
		c := &oauth.TokenClient{TokenEndpoint: endpoint, ProofAudience: tc.aud, WIT: w.WIT, Key: w.Key, Proof: tc.method, Now: clock.Now}
		tr, err := c.Token(context.Background(), form)
		if got := <-seen; got != tc.method.String() {
			t.Fatalf("%s: the endpoint saw %s", tc.method, got)
		}
		if err != nil || tr.AccessToken != "at" || tr.TokenType != "Bearer" || tr.ExpiresIn != 60 || tr.Scope != "trip.read" {
			t.Fatalf("%s: %v %+v", tc.method, err, tr)
		}
	}
	// The proof names the audience: a WPT for the token endpoint URL is not one for
	// https://as.example.
	c := &oauth.TokenClient{TokenEndpoint: endpoint, WIT: w.WIT, Key: w.Key, Proof: proof.WPT, Now: clock.Now}
	_, err := c.Token(context.Background(), form)
	if got := <-seen; !strings.HasPrefix(got, "refused") {
		t.Fatalf("a WPT for another audience: %s", got)
	}
	wantErr(t, err, errcode.Unauthenticated, errcode.Failed)
}
