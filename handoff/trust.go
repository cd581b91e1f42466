package handoff

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Trust is the receiver's trust configuration: which keys speak for which AgentId
// (section 3.4). A key is used only for the agents it is bound to, and only with its one
// algorithm (keys.PublicKey is pinned to one).
//
// KeysFor returns errcode.UntrustedIssuer when agent has no keys (reported as reason
// untrusted-key), or an Incomplete error (errcode.KeysUnavailable) when the source
// cannot answer. The returned KeySet answers errcode.UnknownKey for a kid it does not
// hold (also untrusted-key).
type Trust interface {
	KeysFor(ctx context.Context, agent string) (keys.KeySet, error)
}

// StaticTrust binds fixed key sets to AgentIds. Within an agent's set a key is found by
// its kid or by its RFC 7638 thumbprint (the kid that section 3.1 recommends), so a
// JWK Set whose keys carry other kids, or none, still works with thumbprint kids. It is
// safe for concurrent use.
type StaticTrust struct {
	mu     sync.RWMutex
	agents map[string]*agentKeys
}

// NewStaticTrust returns an empty trust configuration.
func NewStaticTrust() *StaticTrust { return &StaticTrust{agents: map[string]*agentKeys{}} }

// Bind says that ks speak for agent (in addition to keys bound before).
func (t *StaticTrust) Bind(agent string, ks ...*keys.PublicKey) error {
	if agent == "" {
		return errcode.New(errcode.InvalidRequest, "empty AgentId")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.agents[agent]
	if a == nil {
		a = &agentKeys{byKID: map[string]*keys.PublicKey{}}
		t.agents[agent] = a
	}
	for _, k := range ks {
		if k == nil {
			return errcode.New(errcode.InvalidKey, "nil key for %q", agent)
		}
		names := []string{k.Thumbprint()}
		if k.KID() != "" && k.KID() != names[0] {
			names = append(names, k.KID())
		}
		for _, n := range names {
			if old, dup := a.byKID[n]; dup && old != k {
				return errcode.New(errcode.InvalidKey, "two keys of %q answer to kid %q", agent, n)
			}
			a.byKID[n] = k
		}
		a.all = append(a.all, k)
	}
	return nil
}

// Agents returns the AgentIds that have keys.
func (t *StaticTrust) Agents() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]string, 0, len(t.agents))
	for a := range t.agents {
		out = append(out, a)
	}
	return out
}

// KeysFor implements Trust.
func (t *StaticTrust) KeysFor(_ context.Context, agent string) (keys.KeySet, error) {
	t.mu.RLock()
	a, ok := t.agents[agent]
	t.mu.RUnlock()
	if !ok || len(a.all) == 0 {
		return nil, errcode.New(errcode.UntrustedIssuer, "agent %q has no trusted keys", agent)
	}
	return a, nil
}

type agentKeys struct {
	byKID map[string]*keys.PublicKey
	all   []*keys.PublicKey
}

// LookupKey implements keys.KeySet: by kid or thumbprint; no kid only when the agent
// has exactly one key.
func (a *agentKeys) LookupKey(_ context.Context, kid string) (*keys.PublicKey, error) {
	if kid == "" {
		if len(a.all) == 1 {
			return a.all[0], nil
		}
		return nil, errcode.New(errcode.UnknownKey, "no kid and the agent has %d keys", len(a.all))
	}
	if k, ok := a.byKID[kid]; ok {
		return k, nil
	}
	return nil, errcode.New(errcode.UnknownKey, "kid %q is not bound to this agent", kid)
}

// MaxTrustFileSize bounds a trust document.
const MaxTrustFileSize = 4 << 20

// ParseTrust reads the trust document of the command line: a JSON object mapping each
// AgentId to a JWK Set of the keys that speak for it, e.g.
//
//	{"spiffe://a.example/agent/planner": {"keys": [{"kty":"EC", ..., "alg":"ES256"}]}}
//
// Every key is pinned to one algorithm (section 3.4): its "alg", or without one the one
// its type admits (EC P-256: ES256; OKP Ed25519: EdDSA), as keys.ParsePublicJWK decides.
func ParseTrust(b []byte) (*StaticTrust, error) {
	if len(b) > MaxTrustFileSize {
		return nil, errcode.New(errcode.InvalidKey, "trust document larger than %d octets", MaxTrustFileSize)
	}
	if !json.Valid(b) {
		return nil, errcode.New(errcode.InvalidEncoding, "trust document is not JSON")
	}
	ms, err := objectMembers(b)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "trust document is not an object of AgentIds")
	}
	t := NewStaticTrust()
	for _, m := range ms {
		ks, err := parseJWKS(m.val)
		if err != nil {
			return nil, errcode.Wrap(errcode.CodeOf(err), err, "keys of %q", m.name)
		}
		if err := t.Bind(m.name, ks...); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// parseJWKS reads {"keys": [...]} one key at a time with keys.ParsePublicJWK, so that
// several keys without a kid (the example keys of section 2.3 have none) can share a
// set: they are found by thumbprint.
func parseJWKS(b []byte) ([]*keys.PublicKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := netjson.DecodeObject(b, &doc); err != nil || doc.Keys == nil {
		return nil, errcode.New(errcode.InvalidKey, "not a JWK Set")
	}
	if len(doc.Keys) > 64 {
		return nil, errcode.New(errcode.InvalidKey, "more than 64 keys for one agent")
	}
	out := make([]*keys.PublicKey, 0, len(doc.Keys))
	for _, raw := range doc.Keys {
		k, err := keys.ParsePublicJWK(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}
