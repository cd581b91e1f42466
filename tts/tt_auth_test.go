package tts

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// oauth.md 1.9: WIT + WPT authenticates; req_wl is the WIT's subject.
func TestTT1_9_WITAndWPT(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	_, c := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken})
	if c.ReqWL != w.ID.String() {
		t.Fatal(c.ReqWL)
	}
}

// oauth.md 1.9: WIT + WIMSE HTTP signature authenticates, and the signature covers the
// body through Content-Digest: a changed form is refused.
func TestTT1_9_WITAndHTTPSignature(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	resp, err := e.client(w, proof.HTTPSig).Request(t.Context(), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken, Dialog: "D1"})
	if err != nil {
		t.Fatal(err)
	}
	if c := e.verify(resp.AccessToken, tdA); c.ReqWL != w.ID.String() || c.Dialog() != "D1" {
		t.Fatalf("claims %+v", c)
	}
	// The body is changed after signing: Content-Digest no longer matches.
	f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read trip.book", 0), TokenTypeAccessToken)
	req, _ := http.NewRequest(http.MethodPost, e.url+PathToken, strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(e.clock.Now)).SignRequest(req, e.url+PathToken); err != nil {
		t.Fatal(err)
	}
	f.Set("scope", "trip.book")
	req.Body = nopCloser{strings.NewReader(f.Encode())}
	req.ContentLength = int64(len(f.Encode()))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(res)
	wantOAuth(t, res.StatusCode, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.ContentDigestMismatch)
}

// oauth.md 1.9 with wpt-02 section 3.1: a replayed WPT is refused (invalid_client,
// replayed).
func TestTT1_9_ReplayedWPT(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	var saved http.Header
	status, _, body := e.rawPost(w, f, func(r *http.Request) { saved = r.Header.Clone() })
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	status, _, body = e.rawPost(nil, f, func(r *http.Request) { r.Header = saved })
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.Replayed)
}

// oauth.md 1.9: a replayed HTTP signature nonce is refused.
func TestTT1_9_ReplayedHTTPSignature(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	send := func(h http.Header) (int, []byte, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, e.url+PathToken, strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if h == nil {
			if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(e.clock.Now)).SignRequest(req, e.url+PathToken); err != nil {
				t.Fatal(err)
			}
		} else {
			req.Header = h
		}
		sent := req.Header.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, readAll(res), sent
	}
	status, body, h := send(nil)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	status, body, _ = send(h)
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.Replayed)
}

// oauth.md 1.9 item 4: a Txn-Token never authenticates, whether it is offered as a
// bearer token, as the WIT, as a client assertion, or alone in its own field.
func TestTT1_9_TxnTokenIsNotAuthentication(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	txn, _ := e.original(w)
	f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	for name, mutate := range map[string]func(*http.Request){
		"bearer":    func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+txn) },
		"txn field": func(r *http.Request) { r.Header.Set(txntoken.HeaderName, txn) },
		"as the WIT": func(r *http.Request) {
			r.Header.Set("Workload-Identity-Token", txn)
			r.Header.Set("Authorization", "WPT "+txn)
		},
		"as a WPT": func(r *http.Request) {
			r.Header.Set("Workload-Identity-Token", w.WIT)
			r.Header.Set("Authorization", "WPT "+txn)
		},
	} {
		t.Run(name, func(t *testing.T) {
			status, _, body := e.rawPost(nil, f, mutate)
			wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.TxnTokenNotCredential)
		})
	}
	t.Run("client assertion", func(t *testing.T) {
		g := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
		g.Set("client_assertion_type", ClientAssertionTypeJWTBearer)
		g.Set("client_assertion", txn)
		status, _, body := e.rawPost(nil, g, nil)
		wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.TxnTokenNotCredential)
	})
	// A Txn-Token field beside a real credential is not authentication either, and
	// does not stop the real one from working.
	status, _, body := e.rawPost(w, f, func(r *http.Request) {})
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
}

// oauth.md 1.9: private_key_jwt with typ client-authentication+jwt; the jti is claimed
// once; an assertion for another audience or with the wrong typ is refused.
func TestTT1_9_PrivateKeyJWT(t *testing.T) {
	k, _ := keys.Generate(keys.EdDSA)
	id := mustID("wimse://a.example/registered/batch")
	e := newEnv(t, func(c *Config) {
		set, _ := keys.NewStaticSet(k.Public())
		p, err := oauth.NewPrivateKeyJWT([]string{c.Issuer}, []oauth.RegisteredClient{{ID: id, Keys: set}}, c.Replay, c.Now, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Authenticators = append(c.Authenticators[:2], p)
	})
	assertion, _ := oauth.NewClientAssertion(k, id, e.url, time.Minute, e.clock.Now())
	f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	f.Set("client_assertion_type", ClientAssertionTypeJWTBearer)
	f.Set("client_assertion", assertion)
	status, _, body := e.rawPost(nil, f, nil)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var resp oauth.TokenResponse
	_ = jsonUnmarshal(body, &resp)
	if c := e.verify(resp.AccessToken, tdA); c.ReqWL != id.String() {
		t.Fatal(c.ReqWL)
	}
	status, _, body = e.rawPost(nil, f, nil)
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.Replayed)

	other, _ := oauth.NewClientAssertion(k, id, "https://other.example", time.Minute, e.clock.Now())
	f.Set("client_assertion", other)
	status, _, body = e.rawPost(nil, f, nil)
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.AudienceMismatch)

	wpt, _ := wpt.New(k, "x.y.z", e.url, wpt.Bound{})
	f.Set("client_assertion", wpt)
	status, _, body = e.rawPost(nil, f, nil)
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.WrongType)
	// A self_signed subject token may be signed with the registered key.
	ss, _ := txntoken.NewSelfSignedToken(k, id, "alice", e.url, "trip.read", time.Minute, e.clock.Now())
	g := baseForm(tdA, "trip.read", ss, TokenTypeSelfSigned)
	g.Set("client_assertion_type", ClientAssertionTypeJWTBearer)
	g.Set("client_assertion", func() string { a, _ := oauth.NewClientAssertion(k, id, e.url, time.Minute, e.clock.Now()); return a }())
	if status, _, body := e.rawPost(nil, g, nil); status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
}

// oauth.md 1.9: mTLS with an X.509-SVID on a real TLS listener; the certificate's URI
// SAN is req_wl; a certificate of an untrusted CA is invalid_client.
func TestTT1_9_MutualTLSWithX509SVID(t *testing.T) {
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caDER, err := wic.NewCA(caKey, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	bundles := x509bundle.NewSet(x509bundle.FromX509Authorities(spiffeid.RequireTrustDomainFromString(tdA), []*x509.Certificate{ca}))
	e := newEnv(t, func(c *Config) {
		c.Authenticators = append(c.Authenticators, oauth.NewTLSClientAuth(bundles, time.Now))
		c.Policy.Rules = append(c.Policy.Rules, Rule{Workload: "spiffe://a.example/ns/prod/"})
	})
	serverCert, roots := selfSignedServerCert(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: e.srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	svid := func(caKey *ecdsa.PrivateKey, caDER []byte, id string) tls.Certificate {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := wic.IssueWIC(caKey, caDER, k.Public(), mustID(id), now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
	}
	post := func(cert tls.Certificate) (int, []byte) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
		f := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
		res, err := hc.Post("https://"+ln.Addr().String()+PathToken, "application/x-www-form-urlencoded", strings.NewReader(f.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, readAll(res)
	}
	status, body := post(svid(caKey, caDER, "spiffe://a.example/ns/prod/sa/orders"))
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var resp oauth.TokenResponse
	_ = jsonUnmarshal(body, &resp)
	if c := e.verify(resp.AccessToken, tdA); c.ReqWL != "spiffe://a.example/ns/prod/sa/orders" {
		t.Fatal(c.ReqWL)
	}
	rogueKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rogueDER, _ := wic.NewCA(rogueKey, now.Add(-time.Hour), now.Add(time.Hour))
	status, body = post(svid(rogueKey, rogueDER, "spiffe://a.example/ns/prod/sa/orders"))
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.InvalidSignature)
}

func selfSignedServerCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tts"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, pool
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }

func readAll(res *http.Response) []byte {
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return b.Bytes()
}

// Issue 23 point 7 (the endpoint authenticates once): the TTS's parameter rules
// (oauth.md 1.3) still come before client authentication (1.9), as they did when the
// grant authenticated its client itself: a malformed request is refused on its
// parameters whatever its credential (none, a bad one, a Txn-Token), and a refused
// request claims no proof in the replay store.
func TestIssue23_7_TxnParametersBeforeAuthentication(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	txn, _ := e.original(w)
	good := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	with := func(set, del string, v string) url.Values {
		f := url.Values{}
		for k, vs := range good {
			f[k] = append([]string(nil), vs...)
		}
		if del != "" {
			f.Del(del)
		}
		if set != "" {
			f.Set(set, v)
		}
		return f
	}
	creds := map[string]func(*http.Request){
		"none": nil,
		"a bad WPT": func(r *http.Request) {
			r.Header.Set("Authorization", "WPT a.b.c")
			r.Header.Set("Workload-Identity-Token", "a.b.c")
		},
		"a Txn-Token": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+txn) },
	}
	for name, tc := range map[string]struct {
		form   url.Values
		status int
		oauth  string
		code   errcode.Code
	}{
		"grant_type":           {with("grant_type", "", "password"), 400, oauth.ErrUnsupportedGrantType, errcode.UnsupportedGrantType},
		"requested_token_type": {with("requested_token_type", "", "urn:x"), 400, oauth.ErrInvalidRequest, errcode.UnsupportedTokenType},
		"scope missing":        {with("", "scope", ""), 400, oauth.ErrInvalidRequest, errcode.InvalidRequest},
		"resource":             {with("resource", "", "https://r.example/"), 400, oauth.ErrInvalidRequest, errcode.InvalidRequest},
	} {
		for cname, mutate := range creds {
			t.Run(name+"/"+cname, func(t *testing.T) {
				status, _, body := e.rawPost(nil, tc.form, mutate)
				wantOAuth(t, status, body, tc.status, tc.oauth, tc.code)
			})
		}
	}

	// A WPT does not cover the body: the same proof, refused on a parameter, is not
	// spent, and still authenticates the corrected request.
	var proved http.Header
	status, _, body := e.rawPost(w, with("", "subject_token", ""), func(r *http.Request) { proved = r.Header.Clone() })
	wantOAuth(t, status, body, 400, oauth.ErrInvalidRequest, errcode.InvalidRequest)
	status, _, body = e.rawPost(nil, good, func(r *http.Request) { r.Header = proved })
	if status != http.StatusOK {
		t.Fatalf("the proof of a request refused on its parameters was spent: %d %s", status, body)
	}
	// And once spent, it is refused: the replay store is the authenticator's.
	status, _, body = e.rawPost(nil, good, func(r *http.Request) { r.Header = proved })
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.Replayed)
}
