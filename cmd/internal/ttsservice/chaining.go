package ttsservice

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
)

// chainingSetup is the identity chaining part of the configuration, checked and with
// its key sources built; handlers builds AS A and AS B from it for the TTS's token
// endpoint (the grant issuer validates Txn-Tokens with the verifier of the TTS's own
// configuration).
type chainingSetup struct {
	cfg      *ChainingConfig
	issuer   string
	endpoint string
	ring     *keys.Ring
	auths    []oauth.Authenticator
	replay   store.Replay
	asA      []chaining.GrantPeer
	asB      []chaining.BearerPeer
	idTokens []chaining.IDTokenIssuer
	audience string
	ready    []tts.ReadyCheck
}

// checkChaining checks the chaining section without opening anything (tts
// --check-config runs it too): as_a or as_b; every peer named once, used, and referred
// to only when configured; keys (exactly one of jwks_url, jwks_file, metadata) for the
// peers as_b redeems grants of; scopes for them; subject policies that can work;
// as_a peers' resources absolute URIs; lifetimes within the limits; a WIT
// authentication method.
func checkChaining(cfg *Config) error {
	cc := cfg.Chaining
	if cc == nil {
		return nil
	}
	if cc.ASA == nil && cc.ASB == nil {
		return fmt.Errorf("chaining: as_a, as_b or both are required")
	}
	methods := cfg.Auth.Methods
	if len(methods) == 0 {
		methods = []string{oauth.MethodHTTPSig, oauth.MethodWPT}
	}
	if !slices.Contains(methods, oauth.MethodHTTPSig) && !slices.Contains(methods, oauth.MethodWPT) {
		return fmt.Errorf("chaining: auth.methods must include wit_httpsig or wit_wpt (grants are bound to the client's WIT key)")
	}
	peers := map[string]*ChainPeerConfig{}
	for i := range cc.Peers {
		p := &cc.Peers[i]
		if p.Issuer == "" {
			return fmt.Errorf("chaining.peers: an issuer is required")
		}
		if _, dup := peers[p.Issuer]; dup {
			return fmt.Errorf("chaining.peers: %s twice", p.Issuer)
		}
		peers[p.Issuer] = p
	}
	used := map[string]bool{}
	ref := func(section, iss string, sub SubjectConfig) (*ChainPeerConfig, error) {
		p, ok := peers[iss]
		if !ok {
			return nil, fmt.Errorf("chaining.%s.peers: %q is not in chaining.peers", section, iss)
		}
		m := subjectMap(sub)
		if err := m.Check(); err != nil {
			return nil, fmt.Errorf("chaining.%s.peers[%s].subject: %w", section, iss, err)
		}
		used[iss] = true
		return p, nil
	}
	if a := cc.ASA; a != nil {
		if len(a.Peers) == 0 {
			return fmt.Errorf("chaining.as_a.peers: at least one")
		}
		if a.GrantLifetime < 0 || a.GrantLifetime > chaining.MaxGrantLifetime {
			return fmt.Errorf("chaining.as_a.grant_lifetime: at most %s", chaining.MaxGrantLifetime)
		}
		for _, ap := range a.Peers {
			if _, err := ref("as_a", ap.Issuer, ap.Subject); err != nil {
				return err
			}
			if err := chaining.CheckResources(ap.Resources); err != nil {
				return fmt.Errorf("chaining.as_a.peers[%s].resources: %w", ap.Issuer, err)
			}
		}
		if err := checkIDTokenIssuers(a.IDTokenIssuers); err != nil {
			return err
		}
	}
	if b := cc.ASB; b != nil {
		if len(b.Peers) == 0 {
			return fmt.Errorf("chaining.as_b.peers: at least one")
		}
		if b.AccessTokenLifetime < 0 || b.AccessTokenLifetime > chaining.MaxAccessTokenLifetime {
			return fmt.Errorf("chaining.as_b.access_token_lifetime: at most %s", chaining.MaxAccessTokenLifetime)
		}
		if err := chaining.CheckResources(b.Resources); err != nil {
			return fmt.Errorf("chaining.as_b.resources: %w", err)
		}
		for _, bp := range b.Peers {
			p, err := ref("as_b", bp.Issuer, bp.Subject)
			if err != nil {
				return err
			}
			// Exactly one of jwks_url, jwks_file, metadata: metadata alone, or one of the pair.
			if p.Metadata && p.JWKS != (kit.JWKS{}) || !p.Metadata && !p.JWKS.One() {
				return fmt.Errorf("chaining.peers[%s]: as_b redeems its grants, so exactly one of jwks_url, jwks_file, metadata is required", p.Issuer)
			}
			if len(bp.Scopes) == 0 {
				return fmt.Errorf("chaining.as_b.peers[%s].scopes: at least one (nothing crosses by default)", p.Issuer)
			}
			if bp.AllowUntyped && len(bp.Audiences) == 0 {
				return fmt.Errorf("chaining.as_b.peers[%s]: allow_untyped needs audiences", p.Issuer)
			}
			if p.RSA != nil {
				if err := rsaPolicy(p.RSA).Check(); err != nil {
					return fmt.Errorf("chaining.peers[%s].rsa: %w", p.Issuer, err)
				}
			}
		}
	}
	for iss := range peers {
		if !used[iss] {
			return fmt.Errorf("chaining.peers: %s is used by neither as_a nor as_b", iss)
		}
	}
	return checkPeerConditions(cfg)
}

// checkPeerConditions compiles the peers' CEL parts, so that -check-config
// type-checks them.
func checkPeerConditions(cfg *Config) error {
	cc := cfg.Chaining
	if a := cc.ASA; a != nil {
		for i, ap := range a.Peers {
			if err := asAConditions(cfg.file, i, ap).Check(); err != nil {
				return err
			}
		}
	}
	if b := cc.ASB; b != nil {
		for i, bp := range b.Peers {
			if err := asBConditions(cfg.file, i, bp).Check(); err != nil {
				return err
			}
		}
	}
	return nil
}

func asAConditions(file string, i int, ap ASAPeerConfig) chaining.PeerConditions {
	at := fmt.Sprintf("chaining.as_a.peers[%d].", i)
	return chaining.PeerConditions{When: expr(ap.When, file, at+"when"), GrantScopes: expr(ap.GrantScopes, file, at+"grant_scopes")}
}

func asBConditions(file string, i int, bp ASBPeerConfig) chaining.PeerConditions {
	at := fmt.Sprintf("chaining.as_b.peers[%d].", i)
	return chaining.PeerConditions{When: expr(bp.When, file, at+"when"), GrantScopes: expr(bp.GrantScopes, file, at+"grant_scopes")}
}

// prepareChaining builds the peers' key sources for a checked chaining section. It
// returns nil when chaining is not configured.
func prepareChaining(ctx context.Context, cfg *Config, issuer, endpoint string, ring *keys.Ring, auths []oauth.Authenticator, replay store.Replay) (*chainingSetup, error) {
	if err := checkChaining(cfg); err != nil {
		return nil, err
	}
	cc := cfg.Chaining
	if cc == nil {
		return nil, nil
	}
	c := &chainingSetup{cfg: cc, issuer: issuer, endpoint: endpoint, ring: ring, replay: replay}
	// The grant and the access token bind the client's WIT key: only the WIT methods
	// authenticate chaining requests, in the order auth.methods gives them.
	for _, a := range auths {
		if n := a.Name(); n == oauth.MethodHTTPSig || n == oauth.MethodWPT {
			c.auths = append(c.auths, a)
		}
	}
	peers := map[string]*ChainPeerConfig{}
	for i := range cc.Peers {
		peers[cc.Peers[i].Issuer] = &cc.Peers[i]
	}
	if a := cc.ASA; a != nil {
		for i, ap := range a.Peers {
			p := peers[ap.Issuer]
			c.asA = append(c.asA, chaining.GrantPeer{Issuer: p.Issuer, TokenEndpoint: p.TokenEndpoint, Audiences: p.Audiences,
				Scopes: ap.Scopes, Subject: subjectMap(ap.Subject), Workloads: ap.Workloads, IDJAG: ap.IDJAG, Resources: ap.Resources,
				PeerConditions: asAConditions(cfg.file, i, ap)})
		}
		var err error
		if c.idTokens, err = c.openIDTokenIssuers(ctx, cfg.JWKSRetry, a.IDTokenIssuers); err != nil {
			return nil, err
		}
	}
	if b := cc.ASB; b != nil {
		c.audience = b.Audience
		if c.audience == "" {
			c.audience = cfg.TrustDomains[0]
		}
		for i, bp := range b.Peers {
			p := peers[bp.Issuer]
			ks, ready, err := peerKeys(ctx, cfg.JWKSRetry, p)
			if err != nil {
				return nil, err
			}
			if ready != nil {
				c.ready = append(c.ready, ready)
			}
			c.asB = append(c.asB, chaining.BearerPeer{Issuer: p.Issuer, Keys: ks, Typs: peerTyps(p.Typs, bp.IDJAG), Algs: p.Algs, RSA: p.RSA != nil,
				AllowUntyped: bp.AllowUntyped, Audiences: bp.Audiences, Scopes: bp.Scopes, Subject: subjectMap(bp.Subject),
				Clients: bp.Clients, AllowUnbound: bp.AllowUnbound, PeerConditions: asBConditions(cfg.file, i, bp)})
		}
	}
	return c, nil
}

// peerKeys: exactly one of jwks_url (lazy), jwks_file, metadata (lazy discovery); with
// an rsa section, the set is opened to RSA keys as the section says.
func peerKeys(ctx context.Context, retry time.Duration, p *ChainPeerConfig) (keys.KeySet, tts.ReadyCheck, error) {
	src := kit.JWKSSource{JWKS: p.JWKS}
	if p.RSA != nil {
		r := rsaPolicy(p.RSA)
		src.RSA = &r
	}
	what := "chaining.peers[" + p.Issuer + "]"
	if p.Metadata {
		// Discovered keys are not a configured JWKS URL: their fetches are not counted.
		src.MetadataIssuer = p.Issuer
		return kit.OpenJWKS(ctx, what, src, retry)
	}
	return keySource(ctx, retry, what, src)
}

// rsaPolicy is the key policy of an rsa section (subject-token issuers, chaining peers).
func rsaPolicy(c *RSAConfig) keys.RSAPolicy { return keys.RSAPolicy{DefaultAlg: c.DefaultAlg} }

func subjectMap(s SubjectConfig) chaining.SubjectMap {
	return chaining.SubjectMap{Mode: s.Mode, Prefix: s.Prefix, Table: s.Table}
}

// ownAccessTokens is the subject token issuer entry for the access tokens this TTS
// binary's AS B issues: the TTS of domain B accepts them as subject tokens (section 11
// step 4), with typ at+jwt and the configured audience required.
func (c *chainingSetup) ownAccessTokens() []tts.JWTIssuer {
	if c == nil || c.cfg.ASB == nil {
		return nil
	}
	return []tts.JWTIssuer{{Issuer: c.issuer, Keys: chaining.RingKeySet(c.ring), Typ: chaining.AccessTokenTyp, Audiences: []string{c.audience}}}
}

// handlers builds the chaining handlers served at the TTS's token endpoint (nil when
// chaining is not configured); ttsCfg is the TTS's configuration, whose Txn-Tokens AS A
// accepts as subject tokens.
func (c *chainingSetup) handlers(ttsCfg tts.Config, skew time.Duration, logger *slog.Logger) ([]oauth.Handler, error) {
	if c == nil {
		return nil, nil
	}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
		err error
	)
	if a := c.cfg.ASA; a != nil {
		asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: c.issuer, TokenEndpoint: c.endpoint, Keys: c.ring,
			Authenticators: c.auths, TxnTokens: tts.TxnTokenVerifierFor(ttsCfg), Peers: c.asA, Lifetime: a.GrantLifetime,
			IDTokens: c.idTokens, Logger: logger})
		if err != nil {
			return nil, err
		}
	}
	if b := c.cfg.ASB; b != nil {
		asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: c.issuer, TokenEndpoint: c.endpoint, Keys: c.ring,
			Authenticators: c.auths, Replay: c.replay, Peers: c.asB, Audiences: append([]string{c.audience}, b.Resources...),
			Lifetime: b.AccessTokenLifetime, MaxGrantAge: b.MaxGrantAge, Skew: skew, Logger: logger})
		if err != nil {
			return nil, err
		}
	}
	return chaining.Handlers(asA, asB), nil
}
