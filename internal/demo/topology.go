package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// server is one real HTTP server on a loopback port.
type server struct {
	URL string
	srv *http.Server
	ln  net.Listener
}

func listen() (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &server{URL: "http://" + ln.Addr().String(), ln: ln}, nil
}

func (s *server) serve(h http.Handler) {
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(s.ln) }()
}

func (s *server) close() {
	if s.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
	} else {
		_ = s.ln.Close()
	}
}

// domain is one trust domain: its WIT issuer and its TTS binary (the Transaction Token
// Service with the identity-chaining authorization server behind one token endpoint).
type domain struct {
	// wrap, when set, wraps the domain's servers (the demo records what reaches B).
	wrap     func(http.Handler) http.Handler
	name     string
	wit, tts *server
	ring     *keys.Ring
	ttsSrv   *tts.Server
	replay   store.Replay
}

func (d *domain) wrapped(h http.Handler) http.Handler {
	if d.wrap != nil {
		return d.wrap(h)
	}
	return h
}

func (d *domain) endpoint() string { return d.tts.URL + tts.PathToken }

func newDomain(name string) (*domain, error) {
	d := &domain{name: name, replay: store.NewMemory()}
	var err error
	if d.wit, err = listen(); err != nil {
		return nil, err
	}
	if d.tts, err = listen(); err != nil {
		return nil, err
	}
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	d.ring = keys.NewRing(k, nil)
	return d, nil
}

// startWITIssuer runs the domain's WIT issuer. The demo's workloads authenticate in
// development mode: a demo has no SPIFFE or registered keys to show them.
func (d *domain) startWITIssuer() error {
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		return err
	}
	rot, err := witissuer.NewStaticRotator(k, witissuer.RotationConfig{Retain: 2 * time.Hour})
	if err != nil {
		return err
	}
	dev, err := witissuer.NewDev(nil, []string{"wimse://" + d.name + "/"})
	if err != nil {
		return err
	}
	srv, err := witissuer.New(witissuer.Config{Issuer: d.wit.URL, Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{d.name}}, Routes: []witissuer.Route{{Path: "/v1/wit", Methods: []witissuer.Authenticator{dev}}}})
	if err != nil {
		return err
	}
	d.wit.serve(d.wrapped(srv.Handler()))
	return nil
}

// trustOf trusts the WIT issuers of ds through their JWKS URLs.
func trustOf(ctx context.Context, ds ...*domain) *keys.Trust {
	tr := keys.NewTrust()
	for _, d := range ds {
		tr.AddTrustDomain(d.name, tts.NewLazyRemoteSet(ctx, d.wit.URL+"/.well-known/jwks.json", 100*time.Millisecond, time.Now))
	}
	return tr
}

func wits(ctx context.Context, ds ...*domain) *wit.Validator {
	return wit.NewValidator(trustOf(ctx, ds...), wit.WithCache(256, time.Minute))
}

// startTTS runs the domain's TTS binary as cmd/tts wires it: the TTS, AS A for the
// grant peers, AS B for the bearer peers, behind chaining.Mux.
func (d *domain) startTTS(ctx context.Context, trusted []*domain, grantPeers []chaining.GrantPeer, bearerPeers []chaining.BearerPeer) error {
	auths := tts.WIMSEAuthenticators(wits(ctx, trusted...), d.replay, d.endpoint())
	handlers := []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{d.tts.URL}, tts.SelfSignedOptions{})}
	if bearerPeers != nil {
		own, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: d.tts.URL, Keys: chaining.RingKeySet(d.ring),
			Typ: chaining.AccessTokenTyp, Audiences: []string{d.name}}}, tts.HandlerOptions{})
		if err != nil {
			return err
		}
		handlers = append(handlers, own)
	}
	var err error
	d.ttsSrv, err = tts.New(tts.Config{Issuer: d.tts.URL, TrustDomains: []string{d.name}, Keys: d.ring, Authenticators: auths,
		SubjectHandlers: handlers, Replay: d.replay,
		Policy:        tts.Policy{Rules: []tts.Rule{{Workload: "wimse://" + d.name + "/"}}},
		AmendMetadata: chaining.MetadataFunc(grantPeers != nil, bearerPeers != nil)})
	if err != nil {
		return err
	}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
	)
	if grantPeers != nil {
		if asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: d.tts.URL, Keys: d.ring, Authenticators: auths,
			TxnTokens: d.ttsSrv.TxnTokenVerifier(), Peers: grantPeers}); err != nil {
			return err
		}
	}
	if bearerPeers != nil {
		if asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: d.tts.URL, Keys: d.ring, Authenticators: auths, Replay: d.replay,
			Peers: bearerPeers, Audiences: []string{d.name}}); err != nil {
			return err
		}
	}
	d.tts.serve(d.wrapped(chaining.Mux(d.ttsSrv.Handler(), asA, asB)))
	return nil
}

// workload is a participant's credentials: WITs from its domain's issuer, a fresh key
// for each.
type workload struct {
	id  identifier.ID
	src wit.Source
}

func (d *domain) workload(path, alg string) workload {
	id := identifier.MustParse("wimse://" + d.name + path)
	c := &witissuer.Client{Endpoint: d.wit.URL + "/v1/wit", Audience: d.wit.URL, Subject: id.String()}
	return workload{id: id, src: c.Source(wit.SourceAlg(alg))}
}

// recorder keeps every request that reaches a server of domain B, for the domain
// separation check.
type recorder struct {
	mu   sync.Mutex
	seen [][]byte
}

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "%s %s\n", r.Method, r.URL)
		_ = r.Header.Write(&buf)
		buf.Write(body)
		rec.mu.Lock()
		rec.seen = append(rec.seen, buf.Bytes())
		rec.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (rec *recorder) contains(needle string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, b := range rec.seen {
		if bytes.Contains(b, []byte(needle)) {
			return true
		}
	}
	return false
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.seen)
}
