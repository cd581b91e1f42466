package ttsservice

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// The ID-JAG part of the chaining section (docs/tts.md, "ID-JAG"): as_a.peers[].id_jag
// and resources, as_a.id_token_issuers, as_b.peers[].id_jag and as_b.resources.

// checkIDTokenIssuers: an issuer and exactly one of jwks_url, jwks_file each, named
// once; an rsa section that can work.
func checkIDTokenIssuers(iss []IDTokenIssuerConfig) error {
	seen := map[string]bool{}
	for _, p := range iss {
		switch {
		case p.Issuer == "":
			return fmt.Errorf("chaining.as_a.id_token_issuers: an issuer is required")
		case seen[p.Issuer]:
			return fmt.Errorf("chaining.as_a.id_token_issuers: %s twice", p.Issuer)
		case !p.JWKS.One():
			return fmt.Errorf("chaining.as_a.id_token_issuers[%s]: exactly one of jwks_url, jwks_file", p.Issuer)
		}
		seen[p.Issuer] = true
		if p.RSA != nil {
			if err := rsaPolicy(p.RSA).Check(); err != nil {
				return fmt.Errorf("chaining.as_a.id_token_issuers[%s].rsa: %w", p.Issuer, err)
			}
		}
	}
	return nil
}

// openIDTokenIssuers opens the identity providers' keys (a URL lazily, with a
// readiness check, like every other issuer's).
func (c *chainingSetup) openIDTokenIssuers(ctx context.Context, retry time.Duration, iss []IDTokenIssuerConfig) ([]chaining.IDTokenIssuer, error) {
	var out []chaining.IDTokenIssuer
	for _, p := range iss {
		src := kit.JWKSSource{JWKS: p.JWKS}
		if p.RSA != nil {
			r := rsaPolicy(p.RSA)
			src.RSA = &r
		}
		ks, ready, err := keySource(ctx, retry, "chaining.as_a.id_token_issuers["+p.Issuer+"]", src)
		if err != nil {
			return nil, err
		}
		if ready != nil {
			c.ready = append(c.ready, ready)
		}
		out = append(out, chaining.IDTokenIssuer{Issuer: p.Issuer, Keys: ks, Algs: p.Algs, RSA: p.RSA != nil, ClientIDs: p.ClientIDs})
	}
	return out, nil
}

// peerTyps is a peer's accepted grant typs with the ID-JAG's added when id_jag is on
// (the default typ list, GrantTyp, when the peer names none).
func peerTyps(typs []string, idjag bool) []string {
	if !idjag {
		return typs
	}
	if len(typs) == 0 {
		typs = []string{chaining.GrantTyp}
	}
	if slices.Contains(typs, chaining.IDJAGTyp) {
		return typs
	}
	return append(slices.Clone(typs), chaining.IDJAGTyp)
}
