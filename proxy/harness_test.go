package proxy_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/wpt"
)

const td = "a.example"

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// domain is trust domain a.example: a WIT issuer (workloads authenticated in
// development mode: the issuer's methods are tested in witissuer) and a TTS, each a
// real HTTP server on loopback.
type domain struct {
	witURL, ttsURL string
	trust          *keys.Trust
	ttsKeys        keys.KeySet
}

func startDomain(t *testing.T) *domain {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tb, err := testbed.StartDomain(ctx, td)
	mustOK(t, err)
	t.Cleanup(tb.Close)
	return &domain{witURL: tb.WITURL, ttsURL: tb.TTSURL, trust: keys.NewTrust().AddTrustDomain(td, tb.WITKeys(ctx)), ttsKeys: tb.TTSKeys(ctx)}
}

func (d *domain) workload(t *testing.T, path string) (identifier.ID, wit.Source) {
	id, err := identifier.Parse("wimse://" + td + path)
	mustOK(t, err)
	src := (&witissuer.Client{Endpoint: d.witURL + "/v1/wit", Audience: d.witURL, Subject: id.String()}).Source()
	return id, src
}

// app is the application behind the ingress: it records what reached it.
type app struct {
	mu   sync.Mutex
	seen []*http.Request
	body []string
	url  string
}

func startApp(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *app {
	return startAppOn(t, nil, answer)
}

// startAppOn is startApp on ln (nil: a loopback TCP listener of its own).
func startAppOn(t *testing.T, ln net.Listener, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *app {
	a := &app{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.seen = append(a.seen, r)
		a.body = append(a.body, string(b))
		a.mu.Unlock()
		if answer != nil {
			answer(w, r, b)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"sender":"`+r.Header.Get(proxy.VerifiedSenderField)+`","dialog":"`+r.Header.Get(proxy.VerifiedDialogField)+`"}`)
	}))
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

func (a *app) hits() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

func (a *app) last() *http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[len(a.seen)-1]
}

// pair is an egress for workload a1 and an ingress in front of tool t1's application,
// with a hop between them that a test may make tamper.
type pair struct {
	d              *domain
	a1, t1         identifier.ID
	app            *app
	egress         *httptest.Server
	ingress        *httptest.Server
	tamper         func(*http.Request)                 // runs on each signed request between the proxies
	tamperResponse func(*http.Response, []byte) []byte // runs on each answer of the ingress
	ingressReplay  *store.Memory
	recipient      string
	signedResponse bool

	a1src wit.Source

	mu         sync.Mutex
	sent       *http.Request // the last signed request between the proxies
	sentBody   []byte
	answer     int // the ingress's answer to it
	answerBody []byte
	// ingressProto is the protocol of the last request the ingress got (ingressTLS).
	ingressProto string
}

type hop struct{ p *pair }

// RoundTrip tampers (when asked), keeps a copy of the signed request as it left and
// the ingress's answer to it.
func (h hop) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.p.tamper != nil {
		h.p.tamper(r)
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resBody, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if h.p.tamperResponse != nil {
		resBody = h.p.tamperResponse(res, resBody)
		res.ContentLength = int64(len(resBody))
	}
	res.Body = io.NopCloser(bytes.NewReader(resBody))
	h.p.mu.Lock()
	h.p.sent, h.p.sentBody = r.Clone(r.Context()), body
	h.p.answer, h.p.answerBody = res.StatusCode, resBody
	h.p.mu.Unlock()
	return res, nil
}

// ingressCode is the code of the ingress's last answer between the proxies.
func (p *pair) ingressCode() (errcode.Code, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return errcode.CodeOf(problem.Read(p.answer, p.answerBody)), string(p.answerBody)
}

type pairOptions struct {
	stateful bool
	method   proof.Method
	// unsignedOK: the route does not demand a signed response, so an unsigned
	// refusal of the ingress comes back to the agent as it is.
	unsignedOK bool
	// receiver adds options to the ingress's receiver (given the tool's identifier).
	receiver func(t1 identifier.ID) []dialog.ReceiverOption
	// route, egress and ingress change the configurations before they are used.
	route   func(t1 identifier.ID, r *proxy.Route)
	egress  func(c *proxy.EgressConfig)
	ingress func(c *proxy.IngressConfig)
	// app answers in place of the application's echo (each request is still recorded).
	app func(w http.ResponseWriter, r *http.Request, body []byte)
	// appListener, when set, is the application's listener (a Unix socket).
	appListener net.Listener
	// ingressListener, when set, is the ingress's listener.
	ingressListener net.Listener
	// unsignedResponses: the ingress's receiver has no response signer.
	unsignedResponses bool
	// ingressTLS: the ingress serves HTTP/2 over TLS (its certificate in the egress's
	// roots), and records the protocol of each request it gets in ingressProto.
	ingressTLS bool
	// writeTimeout, when set, is the WriteTimeout of the egress's and the ingress's
	// servers (package httpserver's is 30 s).
	writeTimeout time.Duration
	// wrapEgress, when set, wraps the egress's handler.
	wrapEgress func(http.Handler) http.Handler
}

func newPair(t *testing.T, o pairOptions) *pair {
	d := startDomain(t)
	p := &pair{d: d, app: startAppOn(t, o.appListener, o.app), ingressReplay: store.NewMemory(), recipient: "https://t1.a.example/", signedResponse: o.method == proof.HTTPSig}
	var a1src, t1src wit.Source
	p.a1, a1src = d.workload(t, "/agent/a1")
	p.a1src = a1src
	p.t1, t1src = d.workload(t, "/tool/t1")

	wits := wit.NewValidator(d.trust, wit.WithCache(1024, time.Minute))
	signer := t1src
	if o.unsignedResponses {
		signer = nil
	}
	opts := d.receiverOptions(wits, p.recipient, p.ingressReplay, signer, o.stateful)
	if o.receiver != nil {
		opts = append(opts, o.receiver(p.t1)...)
	}
	rc, err := dialog.NewReceiver(opts...)
	mustOK(t, err)
	ic := proxy.IngressConfig{Receiver: rc, Upstream: p.app.url}
	if o.ingress != nil {
		o.ingress(&ic)
	}
	in, err := proxy.NewIngress(ic)
	mustOK(t, err)
	var ingress http.Handler = in
	if o.ingressTLS {
		ingress = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			p.ingressProto = r.Proto
			p.mu.Unlock()
			in.ServeHTTP(w, r)
		})
	}
	p.ingress = httptest.NewUnstartedServer(ingress)
	p.ingress.Config.WriteTimeout = o.writeTimeout
	if o.ingressListener != nil {
		p.ingress.Listener.Close()
		p.ingress.Listener = o.ingressListener
	}
	if o.ingressTLS {
		p.ingress.EnableHTTP2 = true
		p.ingress.StartTLS()
	} else {
		p.ingress.Start()
	}
	t.Cleanup(p.ingress.Close)

	ec := proxy.EgressConfig{
		Self: p.a1, WIT: a1src,
		TTS:       &txntoken.Client{TokenEndpoint: d.ttsURL + tts.PathToken, WITSource: a1src, Proof: proof.WPT},
		Subject:   selfSigned(d, p.a1, a1src),
		Responses: httpsig.NewVerifier(wit.NewValidator(d.trust)),
		Base:      hop{p},
		Routes: []proxy.Route{{Prefix: "/t1", Upstream: p.ingress.URL + "/mcp", TxnAudience: td, TxnScope: "trip.book",
			Proof: o.method, RequireSignedResponse: o.method == proof.HTTPSig && !o.unsignedOK, Recipient: p.recipient}},
	}
	if o.ingressTLS {
		ec.RootCAs = x509.NewCertPool()
		ec.RootCAs.AddCert(p.ingress.Certificate())
	}
	if o.route != nil {
		o.route(p.t1, &ec.Routes[0])
	}
	if o.egress != nil {
		o.egress(&ec)
	}
	eg, err := proxy.NewEgress(ec)
	mustOK(t, err)
	var egress http.Handler = eg
	if o.wrapEgress != nil {
		egress = o.wrapEgress(eg)
	}
	p.egress = httptest.NewUnstartedServer(egress)
	p.egress.Config.WriteTimeout = o.writeTimeout
	p.egress.Start()
	t.Cleanup(p.egress.Close)
	return p
}

// receiverOptions are the options of an ingress's receiver in d for recipient: HTTP
// signatures and WPTs checked with wits and replay, d's Txn-Tokens, responses signed
// as src (nil: not signed), and a registry of dialogs when stateful.
func (d *domain) receiverOptions(wits *wit.Validator, recipient string, replay store.Replay, src wit.Source, stateful bool) []dialog.ReceiverOption {
	opts := []dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(recipient), httpsig.WithReplay(replay))),
		dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences(recipient), wpt.WithReplay(replay))),
		dialog.WithTxnTokens(txntoken.NewVerifier(d.ttsKeys, td)),
	}
	if src != nil {
		opts = append(opts, dialog.WithResponseSigner(signerOf(src)))
	}
	if stateful {
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())))
	}
	return opts
}

// signerOf signs responses with src's current credential.
func signerOf(src wit.Source) func(context.Context) (*httpsig.Signer, error) {
	return func(ctx context.Context) (*httpsig.Signer, error) {
		c, err := src.Credential(ctx)
		if err != nil {
			return nil, err
		}
		return httpsig.NewSigner(c.Key, c.WIT), nil
	}
}

// post sends body as JSON to url with the header fields of h, and reads the answer.
func post(t *testing.T, url, body string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	return send(t, url, body, http.Header{"Content-Type": {"application/json"}}, h)
}

// send POSTs body to url with the header fields of hs (later ones replacing earlier
// ones) and no others, and reads the answer.
func send(t *testing.T, url, body string, hs ...http.Header) (*http.Response, []byte) {
	t.Helper()
	return request(t, http.MethodPost, url, body, hs...)
}

// request sends method to url with body and the fields of hs, and returns the
// response and its body.
func request(t *testing.T, method, url, body string, hs ...http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	mustOK(t, err)
	for _, h := range hs {
		for k, v := range h {
			req.Header[k] = v
		}
	}
	res, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	mustOK(t, err)
	return res, b
}

func selfSigned(d *domain, id identifier.ID, src wit.Source) agent.SubjectFunc {
	return func(ctx context.Context) (string, string, error) {
		c, err := src.Credential(ctx)
		if err != nil {
			return "", "", err
		}
		tok, err := txntoken.NewSelfSignedToken(c.Key, id, "alice@"+td, d.ttsURL, "trip.book", time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}
}
