package keys

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// KeySet answers "which key has this kid". An empty kid is answered only when the set
// holds exactly one key (workload-creds-02 section 3: key choice must be unambiguous).
// Errors: UnknownKey (Failed) or KeysUnavailable (Incomplete).
type KeySet interface {
	LookupKey(ctx context.Context, kid string) (*PublicKey, error)
}

// StaticSet is an immutable set of keys, e.g. read from a JWKS file.
type StaticSet struct {
	byKID map[string]*PublicKey
	all   []*PublicKey
}

// NewStaticSet builds a set; kids must be unique.
func NewStaticSet(ks ...*PublicKey) (*StaticSet, error) {
	s := &StaticSet{byKID: make(map[string]*PublicKey, len(ks))}
	for _, k := range ks {
		if _, dup := s.byKID[k.kid]; dup {
			return nil, errcode.New(errcode.InvalidKey, "duplicate kid %q in key set", k.kid)
		}
		s.byKID[k.kid] = k
		s.all = append(s.all, k)
	}
	return s, nil
}

// ParseJWKS reads a JWK Set document from trust configuration. Every key is pinned to
// one algorithm: its "alg", or without one the one its type admits (EC P-256: ES256;
// OKP Ed25519: EdDSA). RSA keys are refused (ParseJWKSWithRSA opens a set to them).
func ParseJWKS(b []byte) (*StaticSet, error) {
	if len(b) > 1<<20 {
		return nil, errcode.New(errcode.InvalidKey, "JWKS larger than 1 MiB")
	}
	set, err := jwk.Parse(b)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "JWKS")
	}
	return fromJWKSet(set)
}

func fromJWKSet(set jwk.Set) (*StaticSet, error) { return fromJWKSetPolicy(set, nil) }

// LoadJWKSFile reads a JWKS file.
func LoadJWKSFile(path string) (*StaticSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "reading JWKS file")
	}
	return ParseJWKS(b)
}

// LookupKey implements KeySet.
func (s *StaticSet) LookupKey(_ context.Context, kid string) (*PublicKey, error) {
	if kid == "" {
		if len(s.all) == 1 {
			return s.all[0], nil
		}
		return nil, errcode.New(errcode.UnknownKey, "token has no kid and the key set holds %d keys", len(s.all))
	}
	if k, ok := s.byKID[kid]; ok {
		return k, nil
	}
	return nil, errcode.New(errcode.UnknownKey, "kid %q is not trusted", kid)
}

// Keys returns the keys in the set.
func (s *StaticSet) Keys() []*PublicKey { return append([]*PublicKey(nil), s.all...) }

// MarshalJSON writes the set as a JWKS document.
func (s *StaticSet) MarshalJSON() ([]byte, error) { return marshalJWKS(s.all) }

func marshalJWKS(ks []*PublicKey) ([]byte, error) {
	type doc struct {
		Keys []*PublicKey `json:"keys"`
	}
	if ks == nil {
		ks = []*PublicKey{}
	}
	return json.Marshal(doc{Keys: ks})
}

// Trust is the trust configuration: which key sets speak for which trust domain and
// which issuer (wimse.md WIT-1). It is built once from configuration and then read
// concurrently.
type Trust struct {
	mu            sync.RWMutex
	byTrustDomain map[string]KeySet
	byIssuer      map[string]KeySet
}

// NewTrust returns an empty trust configuration.
func NewTrust() *Trust {
	return &Trust{byTrustDomain: map[string]KeySet{}, byIssuer: map[string]KeySet{}}
}

// AddTrustDomain says which keys issue credentials for workloads of trust domain td.
func (t *Trust) AddTrustDomain(td string, ks KeySet) *Trust {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byTrustDomain[td] = ks
	return t
}

// AddIssuer says which keys speak for the issuer iss (e.g. a TTS or an authorization server).
func (t *Trust) AddIssuer(iss string, ks KeySet) *Trust {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byIssuer[iss] = ks
	return t
}

// ForTrustDomain returns the keys for td, or an UntrustedIssuer error.
func (t *Trust) ForTrustDomain(td string) (KeySet, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if ks, ok := t.byTrustDomain[td]; ok {
		return ks, nil
	}
	return nil, errcode.New(errcode.UntrustedIssuer, "trust domain %q is not trusted", td)
}

// ForIssuer returns the keys for iss, or an UntrustedIssuer error.
func (t *Trust) ForIssuer(iss string) (KeySet, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if ks, ok := t.byIssuer[iss]; ok {
		return ks, nil
	}
	return nil, errcode.New(errcode.UntrustedIssuer, "issuer %q is not trusted", iss)
}
