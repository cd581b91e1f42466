package interop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// received is one request a server of b.example received, as received, and its answer.
type received struct {
	server         string
	method, target string
	header         http.Header
	body           []byte
	status         int
	resBody        []byte
}

// receivedLog keeps what the servers it wraps received.
type receivedLog struct {
	mu  sync.Mutex
	all []received
}

func (l *receivedLog) wrap(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		e := received{server: server, method: r.Method, target: r.URL.String(), header: r.Header.Clone(), body: body}
		rr := httptest.NewRecorder()
		next.ServeHTTP(rr, r)
		e.status, e.resBody = rr.Code, rr.Body.Bytes()
		l.mu.Lock()
		l.all = append(l.all, e)
		l.mu.Unlock()
		for k, v := range rr.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rr.Code)
		_, _ = w.Write(e.resBody)
	})
}

func (l *receivedLog) of(server string) []received {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []received
	for _, e := range l.all {
		if e.server == server {
			out = append(out, e)
		}
	}
	return out
}

// redemptions are the jwt-bearer requests Hydra received.
func (l *receivedLog) redemptions(t *testing.T) []received {
	t.Helper()
	var out []received
	for _, e := range l.of(srvHydra) {
		if f, _ := url.ParseQuery(string(e.body)); e.method == http.MethodPost && e.target == "/oauth2/token" && f.Get("grant_type") == oauth.GrantTypeJWTBearer {
			out = append(out, e)
		}
	}
	return out
}

// tokenResponses records the access_token of every token response the egress's TTS
// client got: domain A's Txn-Tokens, what must never reach b.example.
type tokenResponses struct {
	mu     sync.Mutex
	tokens []string
}

func (tr *tokenResponses) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	var out oauth.TokenResponse
	if err == nil && json.Unmarshal(b, &out) == nil && out.AccessToken != "" {
		tr.mu.Lock()
		tr.tokens = append(tr.tokens, out.AccessToken)
		tr.mu.Unlock()
	}
	return res, err
}

func (tr *tokenResponses) all() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.tokens)
}

// The servers of b.example whose requests are recorded.
const (
	srvHydra   = "Hydra"
	srvIngress = "boundary-facing ingress"
)

// jwtLike finds the JWTs inside a value (a header field, a form value, a body).
var jwtLike = regexp.MustCompile(`[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)

// searchable is s with every form-decoding of it and the decoded header and payload of
// every JWT in it: where a dialog identifier or a Txn-Token could hide.
func searchable(s string) string {
	parts := []string{s}
	if f, err := url.ParseQuery(s); err == nil {
		for _, vs := range f {
			parts = append(parts, vs...)
		}
	}
	for _, p := range slices.Clone(parts) {
		for _, tok := range jwtLike.FindAllString(p, -1) {
			for _, seg := range strings.Split(tok, ".")[:2] {
				if b, err := base64.RawURLEncoding.DecodeString(seg); err == nil {
					parts = append(parts, string(b))
				}
			}
		}
	}
	return strings.Join(parts, "\n")
}

// TestHydraBoundaryRoute runs Figure 5 of dialog-binding section 11 through a real
// proxy.Egress whose boundary route has Ory Hydra v2.3.0 as AS B (PeerTokenEndpoint,
// behind a recording reverse proxy; PeerIssuer AS A's name for it), for requests of
// the agent A2 in dialog D1 of a.example:
//
//  1. the egress gets D1's Txn-Token from TTS A and asks AS A (TTS A) for a JWT
//     authorization grant for Hydra;
//  2. it redeems the grant at Hydra (RFC 7523), authenticating as Hydra's OAuth client
//     with the route's PeerClient (fosite requires client authentication for
//     jwt-bearer; without it Hydra answers invalid_request, "Client credentials missing
//     or malformed", checked below), and Hydra issues an RS256 JWT access token;
//  3. it starts the linked dialog D2 with B1 in b.example: Hydra's access token as
//     Bearer, A2's WIT and HTTP signature, a Dialog-Context proposing D2; later
//     requests in D1 continue D2, and the access token is obtained again (steps 1
//     and 2) shortly before it expires, D2 kept.
//
// Step 4 with our boundary-facing ingress (proxy.BoundaryIngress) cannot take a Hydra
// access token, and the test shows the real ingress refusing it: its access token
// verifier (chaining.AccessTokenVerifier, agent.LinkAcceptor) requires an RFC 9068
// token of typ at+jwt, where Hydra writes typ JWT (refused first, wrong_type); it
// accepts no RSA algorithm, where Hydra signs RS256; and the token must be bound to the
// sender's WIT key (cnf.jkt) and issued to the sender (client_id = its WIMSE
// identifier), where Hydra's is a bearer token without cnf, issued to its OAuth client
// (grant_binding_mismatch, checked below on Hydra's claims). Hydra reads neither the
// grant's requested_cnf nor the WIT (docs/hydra.md, "Binding"). So step 4 is B1's own:
// B1 is a dialog.Receiver with a Registry that verifies A2's signature and the
// Dialog-Context and exchanges Hydra's token at TTS B, which takes it as a subject
// token (typ JWT, RS256 allowed there) for a Txn-Token recording D2.
//
// Section 13, domain separation: nothing b.example received — every request Hydra
// received and its log, every request B1 and the ingress received, in target, header
// fields and bodies, form-decoded and inside every JWT — carries D1, D1's
// Dialog-Context, any of A's Txn-Tokens, their signatures, their SHA-256 (base64url,
// base64, hex) or their txn; and only Hydra received the client secret.
func TestHydraBoundaryRoute(t *testing.T) {
	d := startHydraDomains(t)
	ctx := context.Background()
	wits := d.wits(ctx)
	a1ID, a2ID, b1ID := identifier.MustParse("wimse://a.example/agent/a1"), identifier.MustParse("wimse://a.example/agent/a2"), "wimse://b.example/service/b1"
	a2Src, b1Src := d.witSource(t, a2ID.String()), d.witSource(t, b1ID)
	clock := testkit.NewClock(time.Now())
	log := &receivedLog{}

	// Hydra's public API behind a recording reverse proxy. The grant's aud stays
	// Hydra's own token URL (AS A's peer issuer), which is all Hydra compares.
	hydraURL, err := url.Parse(d.hydra.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	hydraFront := httptest.NewServer(log.wrap(srvHydra, &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(hydraURL) }}))
	t.Cleanup(hydraFront.Close)
	peerToken := hydraFront.URL + "/oauth2/token"

	// B1, which does step 4 itself; and our boundary-facing ingress in front of an
	// application that must never be reached.
	b1URL, atB1s := d.startB1(t, wits, b1Src)
	appReached := make(chan struct{}, 8)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { appReached <- struct{}{} }))
	t.Cleanup(app.Close)
	const ingressRecipient = "https://b1-ingress.b.example/"
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(ingressRecipient), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())))
	if err != nil {
		t.Fatal(err)
	}
	ttsBKeys := keys.NewLazyRemoteSet(ctx, d.ttsB.JWKSURI, time.Second, time.Now)
	in, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: app.URL, AllowPlainHTTP: true, Boundary: &proxy.BoundaryIngress{
		Acceptor: &agent.LinkAcceptor{
			TTS: &txntoken.Client{TokenEndpoint: d.ttsB.TokenEndpoint, WITSource: b1Src, Proof: proof.HTTPSig},
			// Hydra's issuer, keys and the aud of its jwt-bearer tokens.
			AccessTokens: &chaining.AccessTokenVerifier{Keys: keys.NewLazyRemoteSet(ctx, d.hydra.JWKSURL, time.Second, time.Now),
				Issuer: d.hydra.Issuer, Audience: d.hydra.TokenURL},
			TrustDomain: "b.example",
		},
		TxnTokens: txntoken.NewVerifier(ttsBKeys, "b.example", txntoken.WithIssuer(d.ttsB.Issuer)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ingress := httptest.NewServer(log.wrap(srvIngress, in))
	t.Cleanup(ingress.Close)

	// A2's egress. Its D1 Txn-Tokens come from TTS A (self-signed subject alice); the
	// recording transport keeps them, as the needles of the domain separation search.
	txnA := &tokenResponses{}
	boundary := func(pc *proxy.PeerClient) *proxy.BoundaryRoute {
		return &proxy.BoundaryRoute{GrantEndpoint: d.ttsA.TokenEndpoint, PeerIssuer: "b.example-as", PeerTokenEndpoint: peerToken, PeerTrustDomain: "b.example", Scope: "trip.read", PeerClient: pc}
	}
	client := &proxy.PeerClient{ID: hydraAgentsClient, Secret: d.agentsSecret}
	route := func(prefix, upstream, recipient string, signed bool, pc *proxy.PeerClient) proxy.Route {
		return proxy.Route{Prefix: prefix, Upstream: upstream, AllowPlainHTTP: true, TxnAudience: "a.example", TxnScope: "trip.read trip.book",
			Recipient: recipient, RequireSignedResponse: signed, Boundary: boundary(pc)}
	}
	eg, err := proxy.NewEgress(proxy.EgressConfig{
		Self: a2ID, WIT: a2Src,
		TTS: &txntoken.Client{TokenEndpoint: d.ttsA.TokenEndpoint, WITSource: a2Src, Proof: proof.WPT, HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: txnA}},
		Subject: func(ctx context.Context) (string, string, error) {
			c, err := a2Src.Credential(ctx)
			if err != nil {
				return "", "", err
			}
			tok, err := txntoken.NewSelfSignedToken(c.Key, a2ID, "alice@a.example", d.ttsA.Issuer, "trip.read trip.book", 5*time.Minute, time.Now())
			return tok, oauth.TokenTypeSelfSigned, err
		},
		Responses: httpsig.NewVerifier(wits),
		Now:       clock.Now,
		Routes: []proxy.Route{
			route("/b1", b1URL, b1URL, true, client),
			route("/ingress", ingress.URL+"/task", ingressRecipient, false, client),
			route("/no-client", b1URL, b1URL, true, nil),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	egress := httptest.NewServer(eg)
	t.Cleanup(egress.Close)

	// A2 is in D1, which A1 initiated; the agent names it with the Dialog-Context it
	// received.
	d1, err := dialog.New(dialogD1, a1ID)
	if err != nil {
		t.Fatal(err)
	}
	call := func(path, body string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, egress.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(dialog.HeaderName, d1.Value())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	var b1Got []atB1 // every request B1 received, for the search
	nextAtB1 := func() atB1 {
		t.Helper()
		select {
		case r := <-atB1s:
			b1Got = append(b1Got, r)
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("B1 received no request")
		}
		return atB1{}
	}
	// accessToken is the access token of Hydra's answer to a redemption.
	accessToken := func(e received) string {
		t.Helper()
		var out oauth.TokenResponse
		if err := json.Unmarshal(e.resBody, &out); err != nil || e.status != http.StatusOK || out.AccessToken == "" {
			t.Fatalf("Hydra answered the redemption %d %s", e.status, e.resBody)
		}
		return out.AccessToken
	}
	wantBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(hydraAgentsClient)+":"+url.QueryEscape(d.agentsSecret)))
	asAKeys, err := keys.NewRemoteSet(ctx, d.ttsA.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}

	// The first request in D1: steps 1 to 3.
	res, body := call("/b1", `{"task":"book a hotel in domain B"}`)
	if res.StatusCode != http.StatusOK || string(body) != `{"ok":true}` {
		t.Fatalf("the first request: %d %s", res.StatusCode, body)
	}
	// Step 1: the Txn-Token the egress chained from records D1 (domain A), and the
	// grant Hydra received is AS A's (signed with TTS A's keys), for Hydra's token URL.
	if toks := txnA.all(); len(toks) != 1 {
		t.Fatalf("step 1: %d Txn-Tokens from TTS A, want 1", len(toks))
	} else if _, c := decodeJWT(t, toks[0]); c["tctx"].(map[string]any)["dlg"] != dialogD1 || c["aud"] != "a.example" {
		t.Fatalf("step 1: the Txn-Token does not record D1: %v", c)
	}
	redeems := log.redemptions(t)
	if len(redeems) != 1 {
		t.Fatalf("step 2: %d redemptions at Hydra, want 1", len(redeems))
	}
	form, _ := url.ParseQuery(string(redeems[0].body))
	grant := form.Get("assertion")
	if _, err := jose.Verify(ctx, grant, jose.Options{Typ: chaining.GrantTyp, MaxSize: chaining.MaxAssertion}, asAKeys); err != nil {
		t.Fatalf("step 1: the grant Hydra received is not AS A's: %v", err)
	}
	if _, gc := decodeJWT(t, grant); gc["iss"] != d.ttsA.Issuer || gc["aud"] != d.hydra.TokenURL || gc["sub"] != "alice@a.example" || gc["scope"] != "trip.read" {
		t.Fatalf("step 1: grant claims %v", gc)
	}
	// Step 2: Hydra received the jwt-bearer request with the route's client
	// authentication, and issued its JWT access token of b.example.
	if got := redeems[0].header.Get("Authorization"); got != wantBasic || form.Get("scope") != "trip.read" {
		t.Fatalf("step 2: Authorization %q, scope %q", got, form.Get("scope"))
	}
	at := accessToken(redeems[0])
	ht, hc := decodeJWT(t, at)
	if ht.Alg != "RS256" || ht.Typ != "JWT" || hc["iss"] != d.hydra.Issuer || hc["sub"] != "alice@a.example" || hc["client_id"] != hydraAgentsClient || hc["scope"] != "trip.read" {
		t.Fatalf("step 2: Hydra's access token: header alg %q typ %q, claims %v", ht.Alg, ht.Typ, hc)
	}
	if aud, _ := hc["aud"].([]any); !slices.Contains(aud, any(d.hydra.TokenURL)) {
		t.Fatalf("step 2: Hydra's access token aud %v", hc["aud"])
	}
	// Step 3: B1 verified A2's signature over Hydra's access token and a Dialog-Context
	// proposing D2, A2 its initiator, and created D2; step 4 (B1's): TTS B's Txn-Token
	// for Hydra's token records D2.
	first := nextAtB1()
	if first.err != nil {
		t.Fatalf("step 3: B1: %v", first.err)
	}
	d2 := first.v.Context
	switch {
	case first.bearer != at || !first.v.Sender.Equal(a2ID) || !d2.Initiator().Equal(a2ID) || d2.DLG() == dialogD1 || first.v.Outcome != dialog.Established:
		t.Fatalf("step 3: B1 verified sender %s, dialog %s (outcome %v), bearer Hydra's: %v", first.v.Sender, d2.Value(), first.v.Outcome, first.bearer == at)
	case !first.v.Signature.Covers(`"dialog-context"`):
		t.Fatal("step 3: the signature does not cover the Dialog-Context")
	}
	if c := verifyTxnTokenB(t, d.ttsB, first.txn.AccessToken); c.Dialog() != d2.DLG() || c.Sub != "hydra:alice@a.example" || c.ReqWL != b1ID {
		t.Fatalf("step 4 (B1): %+v", c)
	}
	// The agent's answer is in D1, and says which linked dialog carried it.
	if res.Header.Get(dialog.HeaderName) != d1.Value() || res.Header.Get(proxy.LinkedDialogField) != d2.DLG() || res.Header.Get(proxy.LinkedEstablishedField) != "true" {
		t.Fatalf("the agent's answer: %v", res.Header)
	}

	// A later request in D1 continues D2 with the same access token: Hydra is not asked.
	if res, body := call("/b1", `{"q":2}`); res.StatusCode != http.StatusOK || res.Header.Get(proxy.LinkedDialogField) != d2.DLG() || res.Header.Get(proxy.LinkedEstablishedField) != "false" {
		t.Fatalf("continued: %d %s %v", res.StatusCode, body, res.Header)
	}
	if next := nextAtB1(); next.err != nil || next.bearer != at || next.v.Context.DLG() != d2.DLG() || next.v.Outcome != dialog.Continued {
		t.Fatalf("continued: B1 got dialog %s, the same access token %v: %v", next.v.Context.DLG(), next.bearer == at, next.err)
	}
	if n := len(log.redemptions(t)); n != 1 {
		t.Fatalf("continued: %d redemptions at Hydra, want 1", n)
	}
	// Hydra's access token lives 5 minutes: 30 s before, the egress redeems a new grant
	// (steps 1 and 2 again, the client authenticated again) and goes on in D2.
	clock.Advance(5*time.Minute - 29*time.Second)
	if res, body := call("/b1", `{"q":3}`); res.StatusCode != http.StatusOK || res.Header.Get(proxy.LinkedDialogField) != d2.DLG() {
		t.Fatalf("renewed: %d %s %v", res.StatusCode, body, res.Header)
	}
	redeems = log.redemptions(t)
	if len(redeems) != 2 || redeems[1].header.Get("Authorization") != wantBasic {
		t.Fatalf("renewed: %d redemptions at Hydra, want 2, the second authenticated", len(redeems))
	}
	renewed := accessToken(redeems[1])
	if next := nextAtB1(); next.err != nil || next.bearer != renewed || renewed == at || next.v.Context.DLG() != d2.DLG() {
		t.Fatalf("renewed: B1 got dialog %s, the new access token %v: %v", next.v.Context.DLG(), next.bearer == renewed, next.err)
	}

	// Without its client at Hydra the route cannot redeem: Hydra's refusal
	// (invalid_request, the client credentials missing) comes back as token_refused,
	// and nothing reaches B1.
	res, body = call("/no-client", `{"q":4}`)
	if err := problem.Read(res.StatusCode, body); errcode.CodeOf(err) != errcode.TokenRefused || !strings.Contains(err.Error(), "Client credentials missing") {
		t.Fatalf("no client: %d %s", res.StatusCode, body)
	}
	if redeems = log.redemptions(t); len(redeems) != 3 || redeems[2].header.Get("Authorization") != "" || redeems[2].status != http.StatusBadRequest {
		t.Fatalf("no client: Hydra got %d redemptions; the last: %v", len(redeems), redeems[len(redeems)-1])
	}

	// Step 4 through our boundary-facing ingress: refused before its receiver runs, and
	// the agent gets the ingress's code; no linked dialog, no application.
	res, body = call("/ingress", `{"q":5}`)
	if err := problem.Read(res.StatusCode, body); errcode.CodeOf(err) != errcode.WrongType || res.Header.Get(proxy.LinkedDialogField) != "" {
		t.Fatalf("boundary-facing ingress: %d %s %v", res.StatusCode, body, res.Header)
	}
	redeems = log.redemptions(t)
	ins := log.of(srvIngress)
	if len(redeems) != 4 || len(ins) != 1 || ins[0].header.Get("Authorization") != "Bearer "+accessToken(redeems[3]) {
		t.Fatalf("boundary-facing ingress: %d redemptions, %d requests at the ingress", len(redeems), len(ins))
	}
	// Why, beyond the typ: Hydra's token is not bound to A2's WIT key and names Hydra's
	// client, not A2, as client_id.
	var claims chaining.AccessTokenClaims
	if err := json.Unmarshal(jwtPayload(t, accessToken(redeems[3])), &claims); err != nil {
		t.Fatal(err)
	}
	cred, err := a2Src.Credential(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := chaining.CheckHolder(&claims, cred.Key.Public()); errcode.CodeOf(err) != errcode.GrantBindingMismatch || claims.ClientID == a2ID.String() {
		t.Fatalf("Hydra's token binds the holder (%v) or names A2 (client_id %q): BoundaryIngress might take it now", err, claims.ClientID)
	}
	select {
	case <-appReached:
		t.Fatal("the application behind the boundary-facing ingress was reached")
	case r := <-atB1s:
		t.Fatalf("B1 received a request it should not have: %v", r.headers)
	default:
	}

	// Section 13: what b.example received. B1's requests came through the channel.
	var seen []received
	seen = append(seen, log.of(srvHydra)...)
	seen = append(seen, ins...)
	for _, r := range b1Got {
		seen = append(seen, received{server: "B1", header: r.headers, body: r.body})
	}
	needles := map[string]string{"D1": dialogD1, "D1's Dialog-Context": d1.Value()}
	toks := txnA.all()
	if len(toks) < 2 {
		t.Fatalf("%d Txn-Tokens of D1, want the first and the renewal's at least", len(toks))
	}
	for i, tok := range toks {
		sum := sha256.Sum256([]byte(tok))
		_, c := decodeJWT(t, tok)
		txn, _ := c["txn"].(string)
		if txn == "" {
			t.Fatalf("Txn-Token %d has no txn", i)
		}
		for what, v := range map[string]string{
			"a Txn-Token of A": tok, "its signature": tok[strings.LastIndexByte(tok, '.')+1:], "its txn": txn,
			"its SHA-256 (base64url)": base64.RawURLEncoding.EncodeToString(sum[:]), "its SHA-256 (base64)": base64.StdEncoding.EncodeToString(sum[:]),
			"its SHA-256 (hex)": hex.EncodeToString(sum[:]),
		} {
			needles[what+" #"+string(rune('0'+i))] = v
		}
	}
	search := func(where, text string) {
		t.Helper()
		s := searchable(text)
		for what, needle := range needles {
			if strings.Contains(s, needle) {
				t.Errorf("%s carries %s", where, what)
			}
		}
	}
	for _, e := range seen {
		search(e.server+" "+e.target, e.target)
		search(e.server+" body", string(e.body))
		for name, vals := range e.header {
			if strings.EqualFold(name, txntoken.HeaderName) || strings.EqualFold(name, dialog.ProvenanceHeader) {
				t.Errorf("%s received a %s field", e.server, name)
			}
			for _, v := range vals {
				search(e.server+" "+name, v)
				if e.server != srvHydra && (strings.Contains(v, d.agentsSecret) || strings.Contains(v, strings.TrimPrefix(wantBasic, "Basic "))) {
					t.Errorf("%s received Hydra's client secret in %s", e.server, name)
				}
			}
		}
		if e.server != srvHydra && strings.Contains(string(e.body), d.agentsSecret) {
			t.Errorf("%s received Hydra's client secret in a body", e.server)
		}
	}
	// Hydra's log (it logs request headers at level info).
	search("Hydra's log", d.hydra.Process.Output())
	if len(seen) < 6 {
		t.Fatalf("the search saw %d requests", len(seen))
	}
}

// jwtPayload is a JWT's decoded payload, unverified.
func jwtPayload(t *testing.T, raw string) []byte {
	t.Helper()
	tok, err := jose.Parse(raw, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Payload
}
