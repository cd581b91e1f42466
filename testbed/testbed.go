package testbed

import (
	"context"
	"net/http/httptest"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Scope is the one scope the world's policies let cross from a.example to b.example.
const Scope = "trip.book"

// keyRefresh is how soon a lazy remote key set may fetch again: the servers are in
// this process, and a rotated-in key is looked up at once.
const keyRefresh = 100 * time.Millisecond

// World is the two trust domains (three WithDomainC). Close stops their servers.
type World struct {
	A *Domain // a.example: AS A, issues grants for B's AS (and C's)
	B *Domain // b.example: AS B, redeems A's grants; trusts A's WITs (and C's)
	C *Domain // c.example, WithDomainC only: issues grants for B's AS, which does not trust it
	// IdP is a.example's identity provider, WithIdP only: AS A issues ID-JAGs for B's
	// AS on its ID tokens.
	IdP *IdP
}

// Start starts a.example, whose AS issues grants for b.example's AS for Scope (or
// WithScopes), and b.example, which redeems them (finding AS A's keys through its
// RFC 8414 metadata and JWKS), mapping A's subjects to "a.example:<sub>". ctx bounds
// the key sets' fetches; it must outlive the World.
func Start(ctx context.Context, opts ...Option) (_ *World, err error) {
	cfg := newConfig(opts)
	w := &World{}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	if w.A, err = newDomain("a.example", cfg); err != nil {
		return nil, err
	}
	if w.B, err = newDomain("b.example", cfg); err != nil {
		return nil, err
	}
	a, b := w.A, w.B
	bTyps := []string{chaining.GrantTyp}
	if cfg.idp {
		if w.IdP, err = startIdP(cfg); err != nil {
			return nil, err
		}
		a.idTokens = []chaining.IDTokenIssuer{{Issuer: w.IdP.Issuer, Keys: keys.NewLazyRemoteSet(ctx, w.IdP.Issuer+PathIdPJWKS, keyRefresh, cfg.now)}}
		bTyps = append(bTyps, chaining.IDJAGTyp)
	}
	grantsFor := func(peers ...*Domain) []chaining.GrantPeer {
		var gs []chaining.GrantPeer
		for _, p := range peers {
			gs = append(gs, chaining.GrantPeer{Issuer: p.TTSURL, TokenEndpoint: p.TokenEndpoint(), Scopes: cfg.scopes, IDJAG: cfg.idp && p == b})
		}
		return gs
	}
	aPeers, bTrusts := grantsFor(b), []*Domain{b, a}
	if cfg.domainC {
		if w.C, err = newDomain("c.example", cfg); err != nil {
			return nil, err
		}
		aPeers, bTrusts = grantsFor(b, w.C), append(bTrusts, w.C)
		if err := w.C.startTTS(ctx, []*Domain{w.C}, grantsFor(b), nil); err != nil {
			return nil, err
		}
	}
	if err := a.startTTS(ctx, []*Domain{a}, aPeers, nil); err != nil {
		return nil, err
	}
	asAKeys := chaining.NewDiscoveredKeys(ctx, a.TTSURL, nil, keyRefresh, cfg.now)
	if err := b.startTTS(ctx, bTrusts, nil, []chaining.BearerPeer{{Issuer: a.TTSURL, Keys: asAKeys, Scopes: cfg.scopes, Typs: bTyps,
		Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: a.Name + ":"}}}); err != nil {
		return nil, err
	}
	return w, nil
}

// Close stops every domain's servers.
func (w *World) Close() {
	for _, d := range []*Domain{w.A, w.B, w.C} {
		if d != nil {
			d.Close()
		}
	}
	w.IdP.close()
}

// StartDomain starts one trust domain alone: its WIT issuer and its TTS, which issues
// Txn-Tokens for self-signed subject tokens of the domain's workloads and is no
// authorization server of identity chaining. ctx bounds the key sets' fetches; it
// must outlive the Domain. Close stops it.
func StartDomain(ctx context.Context, name string, opts ...Option) (*Domain, error) {
	d, err := newDomain(name, newConfig(opts))
	if err != nil {
		return nil, err
	}
	if err := d.startTTS(ctx, []*Domain{d}, nil, nil); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Domain is one trust domain on loopback: its WIT issuer and its TTS (with its
// authorization server).
type Domain struct {
	// Name is the trust domain.
	Name string
	// WITURL is the WIT issuer's base URL (its issuer identifier).
	WITURL string
	// TTSURL is the TTS's base URL, the issuer identifier of its Txn-Tokens, grants
	// and access tokens.
	TTSURL string

	cfg          *config
	witHS, ttsHS *httptest.Server
	ring         *keys.Ring // the TTS's keys: Txn-Tokens, grants and access tokens
	replay       store.Replay
	idTokens     []chaining.IDTokenIssuer // the identity providers AS A trusts (WithIdP)
}

// newDomain listens for both servers and starts the WIT issuer; startTTS starts the
// TTS, once the peers' URLs are known.
func newDomain(name string, cfg *config) (*Domain, error) {
	d := &Domain{Name: name, cfg: cfg, replay: store.NewMemory(store.WithClock(cfg.now)),
		witHS: httptest.NewUnstartedServer(nil), ttsHS: httptest.NewUnstartedServer(nil)}
	d.WITURL, d.TTSURL = "http://"+d.witHS.Listener.Addr().String(), "http://"+d.ttsHS.Listener.Addr().String()
	// As cmd/wit-issuer and cmd/tts bound their servers.
	httpserver.SetDefaults(d.witHS.Config)
	httpserver.SetDefaults(d.ttsHS.Config)
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.ring = keys.NewRing(k, cfg.now)
	if err := d.startWITIssuer(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// startWITIssuer runs the domain's WIT issuer. Its workloads authenticate in
// development mode: a test or example has no SPIFFE or registered keys to show.
func (d *Domain) startWITIssuer() error {
	wk, err := keys.Generate(keys.ES256)
	if err != nil {
		return err
	}
	rot, err := keys.NewStaticRotator(wk, keys.RotationConfig{Retain: 2 * time.Hour, Now: d.cfg.now})
	if err != nil {
		return err
	}
	dev, err := witissuer.NewDev(nil, []string{"wimse://" + d.Name + "/"}, witissuer.DevOptions{})
	if err != nil {
		return err
	}
	ws, err := witissuer.New(witissuer.Config{Issuer: d.WITURL, Keys: rot, Replay: store.NewMemory(store.WithClock(d.cfg.now)),
		Policy: witissuer.Policy{TrustDomains: []string{d.Name}}, Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{dev}}},
		Now: d.cfg.now})
	if err != nil {
		return err
	}
	d.witHS.Config.Handler = d.cfg.wrapped(d.Name, ServerWITIssuer, ws.Handler())
	d.witHS.Start()
	return nil
}

// Close stops the domain's servers.
func (d *Domain) Close() {
	d.witHS.Close()
	d.ttsHS.Close()
}

// TokenEndpoint is the TTS's token endpoint (Txn-Tokens, grants, access tokens).
func (d *Domain) TokenEndpoint() string { return d.TTSURL + tts.PathToken }

// TTSKey is the key the TTS (and its AS) signs with now, for a test that forges
// what only that TTS should sign.
func (d *Domain) TTSKey() *keys.PrivateKey { return d.ring.Active() }

// WITKeys are the WIT issuer's keys as a receiver of the domain gets them: from its
// JWKS.
func (d *Domain) WITKeys(ctx context.Context) keys.KeySet {
	return keys.NewLazyRemoteSet(ctx, d.WITURL+witissuer.PathJWKS, keyRefresh, d.cfg.now)
}

// TTSKeys are the TTS's (and its AS's) keys as a receiver of the domain gets them: from
// its JWKS.
func (d *Domain) TTSKeys(ctx context.Context) keys.KeySet {
	return keys.NewLazyRemoteSet(ctx, d.TTSURL+tts.PathJWKS, keyRefresh, d.cfg.now)
}

// Workload is a participant whose WITs come from its domain's issuer.
type Workload struct {
	ID     identifier.ID
	Source wit.Source
}

// Workload is the participant wimse://<domain><path>; its Source asks the domain's WIT
// issuer for a WIT with a fresh ES256 key whenever it refreshes.
func (d *Domain) Workload(path string) Workload { return d.WorkloadAlg(path, keys.ES256) }

// WorkloadAlg is Workload with keys of alg (keys.ES256, keys.EdDSA, ...).
func (d *Domain) WorkloadAlg(path, alg string) Workload {
	id := identifier.MustParse("wimse://" + d.Name + path)
	c := &witissuer.Client{Endpoint: d.WITURL + witissuer.PathWIT, Audience: d.WITURL, Subject: id.String(), Now: d.cfg.now}
	return Workload{ID: id, Source: c.Source(wit.WithClock(d.cfg.now), wit.WithKeyAlgorithm(alg))}
}

// WITs validates the WITs of ds through their issuers' JWKS, on the domains' clock
// (the first's: a World's share one).
func WITs(ctx context.Context, ds ...*Domain) *wit.Validator {
	now := time.Now
	tr := keys.NewTrust()
	for i, d := range ds {
		if i == 0 {
			now = d.cfg.now
		}
		tr.AddTrustDomain(d.Name, d.WITKeys(ctx))
	}
	return wit.NewValidator(tr, wit.WithClock(now), wit.WithCache(256, time.Minute))
}

// TxnTokens is w's source of the domain TTS's Txn-Tokens on behalf of subject, for
// scope: w's self-signed subject token (oauth.md 1.4; an example has no user login)
// exchanged at the token endpoint, authenticated with w's WIT and an HTTP signature.
func (d *Domain) TxnTokens(w Workload, subject, scope string) *agent.TTSSource {
	client := &txntoken.Client{TokenEndpoint: d.TokenEndpoint(), WITSource: w.Source, Proof: proof.HTTPSig, Now: d.cfg.now}
	return agent.NewTTSSource(client, d.Name, scope, func(ctx context.Context) (string, string, error) {
		c, err := w.Source.Credential(ctx)
		if err != nil {
			return "", "", err
		}
		tok, err := txntoken.NewSelfSignedToken(c.Key, w.ID, subject, d.TTSURL, scope, 5*time.Minute, d.cfg.now())
		return tok, tts.TokenTypeSelfSigned, err
	}, d.cfg.now)
}

// TxnToken is the Txn-Token of the domain's TTS recording dialog dlg for w, on behalf
// of subject, for scope (TxnTokens).
func (d *Domain) TxnToken(ctx context.Context, w Workload, subject, scope, dlg string) (string, error) {
	return d.TxnTokens(w, subject, scope).TxnToken(ctx, dlg)
}

// startTTS runs the domain's TTS binary: the TTS, AS A for grantPeers (it issues JWT
// authorization grants for them), AS B for bearerPeers (it redeems their grants for
// access tokens of this domain), trusting the WITs of the trusted domains. Every
// workload of the domain may ask; a self-signed subject token that names no scope
// stands for Scope (oauth.md 1.5 step 4).
func (d *Domain) startTTS(ctx context.Context, trusted []*Domain, grantPeers []chaining.GrantPeer, bearerPeers []chaining.BearerPeer) error {
	now := d.cfg.now
	auths := oauth.WIMSEAuthenticators(WITs(ctx, trusted...), d.replay, d.TokenEndpoint())
	hopts := tts.HandlerOptions{Now: now}
	handlers := []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{d.TTSURL}, tts.SelfSignedOptions{HandlerOptions: hopts})}
	if bearerPeers != nil {
		// Its own access tokens are subject tokens here (Figure 5 step 4).
		own, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: d.TTSURL, Keys: chaining.RingKeySet(d.ring),
			Typ: chaining.AccessTokenTyp, Audiences: []string{d.Name}}}, hopts)
		if err != nil {
			return err
		}
		handlers = append(handlers, own)
	}
	cfg := tts.Config{Issuer: d.TTSURL, TrustDomains: []string{d.Name}, Keys: d.ring, Authenticators: auths,
		SubjectHandlers: handlers, Replay: d.replay, Now: now,
		Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://" + d.Name + "/", SubjectScopes: []string{Scope}}}}}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
		err error
	)
	if grantPeers != nil {
		if asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: d.TTSURL, Keys: d.ring, Authenticators: auths,
			TxnTokens: tts.TxnTokenVerifierFor(cfg), Peers: grantPeers, IDTokens: d.idTokens, Now: now}); err != nil {
			return err
		}
	}
	if bearerPeers != nil {
		if asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: d.TTSURL, Keys: d.ring, Authenticators: auths, Replay: d.replay,
			Peers: bearerPeers, Audiences: []string{d.Name}, Now: now}); err != nil {
			return err
		}
	}
	cfg.Grants = chaining.Handlers(asA, asB)
	srv, err := tts.New(cfg)
	if err != nil {
		return err
	}
	d.ttsHS.Config.Handler = d.cfg.wrapped(d.Name, ServerTTS, srv.Handler())
	d.ttsHS.Start()
	return nil
}
