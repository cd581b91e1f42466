package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Domain is one trust domain's services as the demo's workloads see them: where its
// WIT issuer and its TTS (with the identity-chaining authorization server behind the
// same token endpoint) answer.
type Domain struct {
	// Name is the trust domain (a.example).
	Name string
	// WITIssuer is the WIT issuer's base URL, which is also its issuer identifier.
	WITIssuer string
	// TTS is the TTS's base URL, which is also its issuer identifier; its token
	// endpoint is read from its metadata.
	TTS string
	// TTSLog, when set, is the file the TTS writes its log to (external topologies):
	// the domain-separation step reads domain B's.
	TTSLog string
}

// Topology is where the two trust domains of the demo run: InProcess starts them in
// this process, External uses services deployed elsewhere (deploy/local). The flow and
// its checks are the same; only what can be observed differs (step 8).
type Topology interface {
	// start makes the two domains available. observe wraps domain B's servers when the
	// topology runs them (the domain-separation recorder).
	start(ctx context.Context, observe func(http.Handler) http.Handler) (*domains, error)
}

// domains is a started topology.
type domains struct {
	a, b Domain
	// title describes the topology for step 1.
	title string
	// serverSide: every request that reached domain B's WIT issuer and TTS went
	// through observe. Otherwise the flow records what the demo's workloads send to
	// them (at the sender) and says what it cannot see.
	serverSide bool
	close      func()
}

// InProcess is the topology that starts both domains' WIT issuers and TTSs in this
// process, on loopback ports, with in-memory stores.
func InProcess() Topology { return inProcess{} }

// External is the topology of services deployed elsewhere, for example by
// deploy/local/up.sh: domain a (which issues grants for b) and domain b (which redeems
// a's grants and trusts a's WITs for that).
func External(a, b Domain) (Topology, error) {
	for _, d := range []Domain{a, b} {
		if d.Name == "" {
			return nil, errors.New("a trust domain name is missing")
		}
		for what, u := range map[string]string{"WIT issuer": d.WITIssuer, "TTS": d.TTS} {
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" {
				return nil, fmt.Errorf("%s of %s: %q is not an absolute http(s) URL", what, d.Name, u)
			}
		}
	}
	if a.Name == b.Name {
		return nil, fmt.Errorf("both domains are %s", a.Name)
	}
	return external{a: a, b: b}, nil
}

type external struct{ a, b Domain }

func (e external) start(context.Context, func(http.Handler) http.Handler) (*domains, error) {
	return &domains{a: e.a, b: e.b, close: func() {},
		title: fmt.Sprintf("Using the deployed trust domains %s and %s: a WIT issuer and a TTS (with its authorization server) each", e.a.Name, e.b.Name)}, nil
}

type inProcess struct{}

// StartDomains starts both trust domains in this process, as InProcess does, and
// returns them, for an External topology in tests; stop shuts them down.
func StartDomains(ctx context.Context) (a, b Domain, stop func(), err error) {
	ds, err := inProcess{}.start(ctx, nil)
	if err != nil {
		return Domain{}, Domain{}, nil, err
	}
	return ds.a, ds.b, ds.close, nil
}

func (inProcess) start(ctx context.Context, observe func(http.Handler) http.Handler) (_ *domains, err error) {
	var servers []*server
	closeAll := func() {
		for _, s := range servers {
			s.close()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	a, err := newDomain("a.example")
	if err != nil {
		return nil, err
	}
	servers = append(servers, a.wit, a.tts)
	b, err := newDomain("b.example")
	if err != nil {
		return nil, err
	}
	servers = append(servers, b.wit, b.tts)
	// Everything that reaches domain B is recorded, for the domain-separation check.
	b.wrap = observe
	if err := a.startWITIssuer(); err != nil {
		return nil, err
	}
	if err := b.startWITIssuer(); err != nil {
		return nil, err
	}
	scopes := []string{"trip.read", "trip.book"}
	if err := a.startTTS(ctx, []*domain{a}, []chaining.GrantPeer{{Issuer: b.tts.URL, TokenEndpoint: b.endpoint(), Scopes: scopes}}, nil); err != nil {
		return nil, err
	}
	bKeys := chaining.NewDiscoveredKeys(ctx, a.tts.URL, nil, 100*time.Millisecond, time.Now)
	if err := b.startTTS(ctx, []*domain{b, a}, nil, []chaining.BearerPeer{{Issuer: a.tts.URL, Keys: bKeys, Scopes: scopes,
		Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: "a.example:"}}}); err != nil {
		return nil, err
	}
	return &domains{a: a.public(), b: b.public(), serverSide: true, close: closeAll,
		title: "Starting trust domains a.example and b.example: a WIT issuer and a TTS (with its authorization server) each"}, nil
}

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
	httpserver.SetDefaults(s.srv)
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

// domain is one in-process trust domain: its WIT issuer and its TTS binary (the
// Transaction Token Service with the identity-chaining authorization server behind one
// token endpoint), wired as cmd/wit-issuer and cmd/tts wire them.
type domain struct {
	// wrap, when set, wraps the domain's servers (the demo records what reaches B).
	wrap     func(http.Handler) http.Handler
	name     string
	wit, tts *server
	ring     *keys.Ring
	ttsSrv   *tts.Server
	replay   store.Replay
}

func (d *domain) public() Domain { return Domain{Name: d.name, WITIssuer: d.wit.URL, TTS: d.tts.URL} }

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
		d.wit.close()
		return nil, err
	}
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		d.wit.close()
		d.tts.close()
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
	rot, err := keys.NewStaticRotator(k, keys.RotationConfig{Retain: 2 * time.Hour})
	if err != nil {
		return err
	}
	dev, err := witissuer.NewDev(nil, []string{"wimse://" + d.name + "/"})
	if err != nil {
		return err
	}
	srv, err := witissuer.New(witissuer.Config{Issuer: d.wit.URL, Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{d.name}}, Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{dev}}}})
	if err != nil {
		return err
	}
	d.wit.serve(d.wrapped(srv.Handler()))
	return nil
}

// witValidator trusts the WIT issuers of ds through their JWKS URLs, fetched with hc.
func witValidator(ctx context.Context, hc *http.Client, ds ...Domain) *wit.Validator {
	var opts []keys.RemoteOption
	if hc != nil {
		opts = append(opts, keys.WithHTTPClient(hc))
	}
	tr := keys.NewTrust()
	for _, d := range ds {
		tr.AddTrustDomain(d.Name, keys.NewLazyRemoteSet(ctx, d.WITIssuer+witissuer.PathJWKS, 100*time.Millisecond, time.Now, opts...))
	}
	return wit.NewValidator(tr, wit.WithCache(256, time.Minute))
}

// startTTS runs the domain's TTS binary as cmd/tts wires it: the TTS, AS A for the
// grant peers, AS B for the bearer peers, at one token endpoint. It trusts the WITs of
// the trusted domains.
func (d *domain) startTTS(ctx context.Context, trusted []*domain, grantPeers []chaining.GrantPeer, bearerPeers []chaining.BearerPeer) error {
	var ds []Domain
	for _, t := range trusted {
		ds = append(ds, t.public())
	}
	auths := oauth.WIMSEAuthenticators(witValidator(ctx, nil, ds...), d.replay, d.endpoint())
	handlers := []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{d.tts.URL}, tts.SelfSignedOptions{})}
	if bearerPeers != nil {
		own, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: d.tts.URL, Keys: chaining.RingKeySet(d.ring),
			Typ: chaining.AccessTokenTyp, Audiences: []string{d.name}}}, tts.HandlerOptions{})
		if err != nil {
			return err
		}
		handlers = append(handlers, own)
	}
	cfg := tts.Config{Issuer: d.tts.URL, TrustDomains: []string{d.name}, Keys: d.ring, Authenticators: auths,
		SubjectHandlers: handlers, Replay: d.replay,
		Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://" + d.name + "/"}}}}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
		err error
	)
	if grantPeers != nil {
		if asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: d.tts.URL, Keys: d.ring, Authenticators: auths,
			TxnTokens: tts.TxnTokenVerifierFor(cfg), Peers: grantPeers}); err != nil {
			return err
		}
	}
	if bearerPeers != nil {
		if asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: d.tts.URL, Keys: d.ring, Authenticators: auths, Replay: d.replay,
			Peers: bearerPeers, Audiences: []string{d.name}}); err != nil {
			return err
		}
	}
	cfg.Grants = chaining.Handlers(asA, asB)
	if d.ttsSrv, err = tts.New(cfg); err != nil {
		return err
	}
	d.tts.serve(d.wrapped(d.ttsSrv.Handler()))
	return nil
}
