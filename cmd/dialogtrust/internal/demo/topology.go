package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/testbed"
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
	// IdP and IdPKeyFile, when both set (domain A of an external topology), are the
	// issuer identifier of an identity provider whose ID tokens this domain's AS
	// accepts for ID-JAGs, and the file of its private JWK: the demo signs the ID token
	// of step 8 with it. Without them step 8 is skipped.
	IdP, IdPKeyFile string
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
	// idp, when the topology has one, is domain A's identity provider, whose ID tokens
	// AS A turns into ID-JAGs (step 8); nil for deployed services.
	idp   idProvider
	close func()
}

// idProvider is an identity provider of domain A: its issuer identifier and the ID
// token of a user (sub) it issues to a workload (aud).
type idProvider interface {
	issuer() string
	idToken(client identifier.ID, user string) (string, error)
}

// testbedIdP is the identity provider of testbed.WithIdP.
type testbedIdP struct{ p *testbed.IdP }

func (t testbedIdP) issuer() string { return t.p.Issuer }
func (t testbedIdP) idToken(client identifier.ID, user string) (string, error) {
	return t.p.IDToken(testbed.Workload{ID: client}, user)
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
	ds := &domains{a: e.a, b: e.b, close: func() {},
		title: fmt.Sprintf("Using the deployed trust domains %s and %s: a WIT issuer and a TTS (with its authorization server) each", e.a.Name, e.b.Name)}
	if e.a.IdP != "" && e.a.IdPKeyFile != "" {
		idp, err := loadKeyIdP(e.a.IdP, e.a.IdPKeyFile)
		if err != nil {
			return nil, err
		}
		ds.idp = idp
	}
	return ds, nil
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

// start starts both domains with package testbed, as cmd/wit-issuer and cmd/tts wire
// them: a.example's AS issues grants for b.example's, which redeems them and trusts
// a.example's WITs for that. observe wraps b.example's servers.
func (inProcess) start(ctx context.Context, observe func(http.Handler) http.Handler) (*domains, error) {
	w, err := testbed.Start(ctx, testbed.WithScopes("trip.read", "trip.book"), testbed.WithIdP(),
		testbed.WithMiddleware(func(domain, _ string, next http.Handler) http.Handler {
			// Everything that reaches domain B is recorded, for the domain-separation check.
			if observe == nil || domain != "b.example" {
				return next
			}
			return observe(next)
		}))
	if err != nil {
		return nil, err
	}
	public := func(d *testbed.Domain) Domain { return Domain{Name: d.Name, WITIssuer: d.WITURL, TTS: d.TTSURL} }
	return &domains{a: public(w.A), b: public(w.B), serverSide: true, idp: testbedIdP{w.IdP}, close: w.Close,
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
