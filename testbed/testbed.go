package testbed

import (
	"context"
	"net/http/httptest"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
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

// World is the two trust domains. Close stops their servers.
type World struct {
	A *Domain // a.example: AS A, issues grants for B's AS
	B *Domain // b.example: AS B, redeems A's grants; trusts A's WITs
}

// Start starts a.example, whose AS issues grants for b.example's AS for Scope, and
// b.example, which redeems them (finding AS A's keys through its RFC 8414 metadata and
// JWKS), mapping A's subjects to "a.example:<sub>". ctx bounds the key sets' fetches;
// it must outlive the World.
func Start(ctx context.Context) (*World, error) {
	a, err := newDomain("a.example")
	if err != nil {
		return nil, err
	}
	b, err := newDomain("b.example")
	if err != nil {
		a.Close()
		return nil, err
	}
	scopes := []string{Scope}
	err = a.startTTS(ctx, []*Domain{a}, []chaining.GrantPeer{{Issuer: b.TTSURL, TokenEndpoint: b.TokenEndpoint(), Scopes: scopes}}, nil)
	if err == nil {
		asAKeys := chaining.NewDiscoveredKeys(ctx, a.TTSURL, nil, keyRefresh, time.Now)
		err = b.startTTS(ctx, []*Domain{b, a}, nil, []chaining.BearerPeer{{Issuer: a.TTSURL, Keys: asAKeys, Scopes: scopes,
			Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: a.Name + ":"}}})
	}
	if err != nil {
		a.Close()
		b.Close()
		return nil, err
	}
	return &World{A: a, B: b}, nil
}

// Close stops both domains' servers.
func (w *World) Close() {
	w.A.Close()
	w.B.Close()
}

// StartDomain starts one trust domain alone: its WIT issuer and its TTS, which issues
// Txn-Tokens for self-signed subject tokens of the domain's workloads and is no
// authorization server of identity chaining. ctx bounds the key sets' fetches; it
// must outlive the Domain. Close stops it.
func StartDomain(ctx context.Context, name string) (*Domain, error) {
	d, err := newDomain(name)
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

	witHS, ttsHS *httptest.Server
	ring         *keys.Ring // the TTS's keys: Txn-Tokens, grants and access tokens
	replay       store.Replay
}

func newDomain(name string) (*Domain, error) {
	d := &Domain{Name: name, replay: store.NewMemory(), witHS: httptest.NewUnstartedServer(nil), ttsHS: httptest.NewUnstartedServer(nil)}
	d.WITURL, d.TTSURL = "http://"+d.witHS.Listener.Addr().String(), "http://"+d.ttsHS.Listener.Addr().String()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	d.ring = keys.NewRing(k, nil)
	wk, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	rot, err := keys.NewStaticRotator(wk, keys.RotationConfig{Retain: 2 * time.Hour})
	if err != nil {
		return nil, err
	}
	dev, err := witissuer.NewDev(nil, []string{"wimse://" + name + "/"})
	if err != nil {
		return nil, err
	}
	ws, err := witissuer.New(witissuer.Config{Issuer: d.WITURL, Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{name}}, Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{dev}}}})
	if err != nil {
		return nil, err
	}
	d.witHS.Config.Handler = ws.Handler()
	d.witHS.Start()
	return d, nil
}

// Close stops the domain's servers.
func (d *Domain) Close() {
	d.witHS.Close()
	d.ttsHS.Close()
}

// TokenEndpoint is the TTS's token endpoint (Txn-Tokens, grants, access tokens).
func (d *Domain) TokenEndpoint() string { return d.TTSURL + tts.PathToken }

// WITKeys are the WIT issuer's keys as a receiver of the domain gets them: from its
// JWKS.
func (d *Domain) WITKeys(ctx context.Context) keys.KeySet {
	return keys.NewLazyRemoteSet(ctx, d.WITURL+witissuer.PathJWKS, keyRefresh, time.Now)
}

// TTSKeys are the TTS's (and its AS's) keys as a receiver of the domain gets them: from
// its JWKS.
func (d *Domain) TTSKeys(ctx context.Context) keys.KeySet {
	return keys.NewLazyRemoteSet(ctx, d.TTSURL+tts.PathJWKS, keyRefresh, time.Now)
}

// Workload is a participant whose WITs come from its domain's issuer.
type Workload struct {
	ID     identifier.ID
	Source wit.Source
}

// Workload is the participant wimse://<domain><path>; its Source asks the domain's WIT
// issuer for a WIT with a fresh key each time.
func (d *Domain) Workload(path string) Workload {
	id := identifier.MustParse("wimse://" + d.Name + path)
	c := &witissuer.Client{Endpoint: d.WITURL + witissuer.PathWIT, Audience: d.WITURL, Subject: id.String()}
	return Workload{ID: id, Source: c.Source(wit.WithKeyAlgorithm(keys.ES256))}
}

// WITs validates the WITs of ds through their issuers' JWKS.
func WITs(ctx context.Context, ds ...*Domain) *wit.Validator {
	tr := keys.NewTrust()
	for _, d := range ds {
		tr.AddTrustDomain(d.Name, d.WITKeys(ctx))
	}
	return wit.NewValidator(tr, wit.WithCache(256, time.Minute))
}

// TxnToken is the Txn-Token of the domain's TTS recording dialog dlg for w, on behalf
// of subject, for scope: w's self-signed subject token (oauth.md 1.4; an example has
// no user login) exchanged at the token endpoint, authenticated with w's WIT and an
// HTTP signature.
func (d *Domain) TxnToken(ctx context.Context, w Workload, subject, scope, dlg string) (string, error) {
	client := &txntoken.Client{TokenEndpoint: d.TokenEndpoint(), WITSource: w.Source, Proof: proof.HTTPSig}
	src := agent.NewTTSSource(client, d.Name, scope, func(ctx context.Context) (string, string, error) {
		c, err := w.Source.Credential(ctx)
		if err != nil {
			return "", "", err
		}
		tok, err := txntoken.NewSelfSignedToken(c.Key, w.ID, subject, d.TTSURL, scope, 5*time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}, nil)
	return src.TxnToken(ctx, dlg)
}

// startTTS runs the domain's TTS binary: the TTS, AS A for grantPeers (it issues JWT
// authorization grants for them), AS B for bearerPeers (it redeems their grants for
// access tokens of this domain), trusting the WITs of the trusted domains. Every
// workload of the domain may ask; a self-signed subject token that names no scope
// stands for Scope (oauth.md 1.5 step 4).
func (d *Domain) startTTS(ctx context.Context, trusted []*Domain, grantPeers []chaining.GrantPeer, bearerPeers []chaining.BearerPeer) error {
	auths := oauth.WIMSEAuthenticators(WITs(ctx, trusted...), d.replay, d.TokenEndpoint())
	handlers := []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{d.TTSURL}, tts.SelfSignedOptions{})}
	if bearerPeers != nil {
		// Its own access tokens are subject tokens here (Figure 5 step 4).
		own, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: d.TTSURL, Keys: chaining.RingKeySet(d.ring),
			Typ: chaining.AccessTokenTyp, Audiences: []string{d.Name}}}, tts.HandlerOptions{})
		if err != nil {
			return err
		}
		handlers = append(handlers, own)
	}
	cfg := tts.Config{Issuer: d.TTSURL, TrustDomains: []string{d.Name}, Keys: d.ring, Authenticators: auths,
		SubjectHandlers: handlers, Replay: d.replay, Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://" + d.Name + "/", SubjectScopes: []string{Scope}}}}}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
		err error
	)
	if grantPeers != nil {
		if asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: d.TTSURL, Keys: d.ring, Authenticators: auths,
			TxnTokens: tts.TxnTokenVerifierFor(cfg), Peers: grantPeers}); err != nil {
			return err
		}
	}
	if bearerPeers != nil {
		if asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: d.TTSURL, Keys: d.ring, Authenticators: auths, Replay: d.replay,
			Peers: bearerPeers, Audiences: []string{d.Name}}); err != nil {
			return err
		}
	}
	cfg.Grants = chaining.Handlers(asA, asB)
	srv, err := tts.New(cfg)
	if err != nil {
		return err
	}
	d.ttsHS.Config.Handler = srv.Handler()
	d.ttsHS.Start()
	return nil
}
