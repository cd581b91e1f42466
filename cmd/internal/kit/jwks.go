package kit

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
)

// JWKS is the jwks_url / jwks_file pair of every configuration section that trusts an
// issuer's public keys (the TTS's wits, auth.clients, subject_tokens.jwt_issuers and
// chaining.peers; the proxy's wits, ingress.txn_tokens and
// ingress.boundary.access_tokens). A section embeds it inline (`yaml:",inline"`), so
// the keys stand in the section itself.
type JWKS struct {
	URL  string `yaml:"jwks_url"`
	File string `yaml:"jwks_file"`
}

// One reports whether exactly one of jwks_url, jwks_file is set, as every section
// requires: none names no keys, both leave open which keys are meant.
func (j JWKS) One() bool {
	return (j.URL == "") != (j.File == "")
}

// JWKSSource is where a configuration section takes an issuer's public keys from:
// exactly one of a JWKS URL (jwks_url), a JWKS file (jwks_file), or the issuer's
// authorization server metadata (metadata: true, chaining peers only).
type JWKSSource struct {
	JWKS
	// MetadataIssuer, when set, discovers the JWKS from this issuer's metadata
	// (chaining.NewDiscoveredKeys).
	MetadataIssuer string
	// RSA, when set, opens the set to RSA keys under this policy (checked by the
	// service's checks; keys checks it again on every parse).
	RSA *keys.RSAPolicy
	// Remote are further options of a jwks_url set (the TTS counts its fetches).
	Remote []keys.RemoteOption
}

// OpenJWKS opens src; what names the section in errors ("wits[dev.local]"). A URL or
// the metadata is lazy: the service may start before the issuer it trusts, and until
// the keys arrive every check is "could not be completed" and the returned readiness
// check fails; retry bounds how often a URL that has not answered is tried again. A
// file is read now, and has no readiness check.
func OpenJWKS(ctx context.Context, what string, src JWKSSource, retry time.Duration) (keys.KeySet, service.ReadyCheck, error) {
	var rsa []keys.RemoteOption
	if src.RSA != nil {
		rsa = []keys.RemoteOption{keys.WithRSA(*src.RSA)}
	}
	switch {
	case src.MetadataIssuer != "" && (src.URL != "" || src.File != ""):
		return nil, nil, fmt.Errorf("%s: metadata, jwks_url and jwks_file exclude each other", what)
	case src.MetadataIssuer != "":
		d := chaining.NewDiscoveredKeys(ctx, src.MetadataIssuer, nil, retry, nil, rsa...)
		return d, d.Ready, nil
	case src.URL != "" && src.File != "":
		return nil, nil, fmt.Errorf("%s: jwks_url and jwks_file exclude each other", what)
	case src.URL != "":
		l := keys.NewLazyRemoteSet(ctx, src.URL, retry, nil, slices.Concat(src.Remote, rsa)...)
		return l, l.Ready, nil
	case src.File != "":
		var set *keys.StaticSet
		var err error
		if src.RSA != nil {
			set, err = keys.LoadJWKSFileWithRSA(src.File, *src.RSA)
		} else {
			set, err = keys.LoadJWKSFile(src.File)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		return set, nil, nil
	}
	return nil, nil, fmt.Errorf("%s: a jwks_url or jwks_file is required", what)
}
