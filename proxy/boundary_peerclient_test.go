package proxy_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// requireClient stands in for an AS B that requires client authentication on the
// jwt-bearer grant, as Ory Hydra does (interop/hydra_test.go runs the real one): a
// redemption without pc's client_secret_basic credentials is refused with
// invalid_client; with them the field is removed and the request goes on to our AS B,
// which refuses an Authorization field that the HTTP signature does not cover.
func requireClient(pc proxy.PeerClient) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			form, _ := url.ParseQuery(string(body))
			if r.Method == http.MethodPost && form.Get("grant_type") == oauth.GrantTypeJWTBearer {
				id, secret, ok := r.BasicAuth()
				id, _ = url.QueryUnescape(id)
				secret, _ = url.QueryUnescape(secret)
				if !ok || id != pc.ID || secret != pc.Secret {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"client authentication failed"}`)
					return
				}
				r.Header.Del("Authorization")
			}
			next.ServeHTTP(w, r)
		})
	}
}

// A boundary route with a PeerClient authenticates to AS B with client_secret_basic
// (RFC 6749 section 2.3.1: client_id and secret form-encoded, then base64) on each
// redemption, the first and the renewal, and sends the secret nowhere else: not to AS
// A with the Txn-Token, not to the peer's ingress or application.
func TestBoundaryRoutePeerClient(t *testing.T) {
	const id, secret = "a.example agents", "s3cr:et/+&="
	bw := newBoundary(t, boundaryOptions{peerClient: &proxy.PeerClient{ID: id, Secret: secret}})
	if res, body := bw.call(t, "/b1", `{"q":1}`); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	bw.figure5Steps(t)
	bw.clock.Advance(31 * time.Second) // AS B's access token lives a minute: renewed
	if res, body := bw.call(t, "/b1", `{"q":2}`); res.StatusCode != 200 {
		t.Fatalf("renewed: %d %s", res.StatusCode, body)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
	redeems := tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeJWTBearer)
	if len(redeems) != 2 {
		t.Fatalf("%d redemptions, want the first and the renewal", len(redeems))
	}
	for i, e := range redeems {
		if got := e.header.Get("Authorization"); got != want {
			t.Fatalf("redemption %d: Authorization %q, want %q", i, got, want)
		}
		if e.status != 200 {
			t.Fatalf("redemption %d: %d %s", i, e.status, e.resBody)
		}
	}
	// The header decodes to the client as registered.
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(want, "Basic "))
	mustOK(t, err)
	gotID, gotSecret, _ := strings.Cut(string(raw), ":")
	if u, _ := url.QueryUnescape(gotID); u != id {
		t.Fatalf("client_id %q", u)
	}
	if u, _ := url.QueryUnescape(gotSecret); u != secret {
		t.Fatalf("secret %q", u)
	}
	// Nothing else carries the secret or the Basic credentials.
	basic := strings.TrimPrefix(want, "Basic ")
	n := 0
	for _, e := range bw.rec.all {
		n++
		isRedeem := e.server == srvTTSB && strings.Contains(string(e.body), "grant_type="+url.QueryEscape(oauth.GrantTypeJWTBearer))
		if isRedeem {
			continue
		}
		for name, vals := range e.header {
			for _, v := range vals {
				if strings.Contains(v, basic) || strings.Contains(v, secret) || strings.Contains(v, url.QueryEscape(secret)) {
					t.Fatalf("%s received the client secret in %s: %s %s", e.server, name, e.method, e.target)
				}
			}
		}
		if strings.Contains(string(e.body), secret) || strings.Contains(string(e.body), url.QueryEscape(secret)) {
			t.Fatalf("%s received the client secret in a body: %s %s", e.server, e.method, e.target)
		}
	}
	if grants := tokenRequests(t, bw.rec, srvTTSA, oauth.GrantTypeTokenExchange); len(grants) == 0 || len(bw.rec.of(srvIngressB)) < 2 || n < 6 {
		t.Fatalf("the search saw %d exchanges, %d at AS A", n, len(grants))
	}
}

// A PeerClient without its secret, or one whose AS B token endpoint is AS A's (the
// secret would go with the Txn-Token), is refused when the egress is built.
func TestBoundaryRoutePeerClientRefused(t *testing.T) {
	self := identifier.MustParse("wimse://a.example/agent/a2")
	src := (&witissuer.Client{Endpoint: "http://127.0.0.1:1/v1/wit", Audience: "http://127.0.0.1:1", Subject: self.String()}).Source()
	route := func(pc *proxy.PeerClient, peerToken string) proxy.Route {
		return proxy.Route{Prefix: "/b1", Upstream: "http://127.0.0.1:2/hotel", AllowPlainHTTP: true, TxnAudience: "a.example", TxnScope: "trip.read",
			Boundary: &proxy.BoundaryRoute{GrantEndpoint: "http://127.0.0.1:3/token", PeerIssuer: "https://as.b.example", PeerTokenEndpoint: peerToken, PeerTrustDomain: "b.example", PeerClient: pc}}
	}
	for name, c := range map[string]struct {
		rt   proxy.Route
		want string
	}{
		"no secret":         {route(&proxy.PeerClient{ID: "agents"}, "http://127.0.0.1:4/token"), "client_id and secret"},
		"no client_id":      {route(&proxy.PeerClient{Secret: "s"}, "http://127.0.0.1:4/token"), "client_id and secret"},
		"AS A's endpoint":   {route(&proxy.PeerClient{ID: "agents", Secret: "s"}, "http://127.0.0.1:3/token"), "AS A's too"},
		"without (is fine)": {route(nil, "http://127.0.0.1:3/token"), ""},
	} {
		_, err := proxy.NewEgress(proxy.EgressConfig{Self: self, WIT: src, TTS: &txntoken.Client{TokenEndpoint: "http://127.0.0.1:3/token", WITSource: src, Proof: proof.WPT},
			Subject:   func(context.Context) (string, string, error) { return "", "", nil },
			Responses: httpsig.NewVerifier(wit.NewValidator(keys.NewTrust())), Routes: []proxy.Route{c.rt}})
		switch {
		case c.want == "" && err != nil:
			t.Fatalf("%s: %v", name, err)
		case c.want != "" && (errcode.CodeOf(err) != errcode.InvalidRequest || !strings.Contains(err.Error(), c.want)):
			t.Fatalf("%s: %v, want invalid_request %q", name, err, c.want)
		}
	}
}
