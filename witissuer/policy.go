package witissuer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Policy defaults.
const (
	DefaultMaxLifetime = time.Hour
)

// DefaultAllowedAlgs are the confirmation-key algorithms allowed without configuration.
var DefaultAllowedAlgs = []string{keys.ES256, keys.EdDSA, keys.Ed25519}

// Rule lets an identity whose identifier starts with FromPrefix obtain the identifier
// that has ToPrefix in its place and the same remainder, e.g. spiffe://td/ns/a ->
// wimse://td/ns/a. Both prefixes end in "/", so a rule never matches across a segment
// (spiffe://td/ns must not cover spiffe://td/nsx).
type Rule struct {
	FromPrefix string
	ToPrefix   string
}

// Policy says which authenticated identity may obtain which subject, with which key
// algorithm and for how long. A request for more is refused, never trimmed.
type Policy struct {
	// TrustDomains are the trust domains this issuer speaks for: an issued subject must
	// lie in one of them (WIT-1: verifiers bind a trust domain to its issuer). Required.
	TrustDomains []string
	// AllowedAlgs are the cnf.jwk algorithms accepted (default DefaultAllowedAlgs).
	AllowedAlgs []string
	// MaxLifetime caps a WIT's lifetime (default 1h).
	MaxLifetime time.Duration
	// DefaultLifetime applies when a request names no ttl (default MaxLifetime).
	DefaultLifetime time.Duration
	// Rules add identifiers an identity may obtain besides its own.
	Rules []Rule
}

// normalize fills defaults and checks the policy; New calls it.
func (p *Policy) normalize() error {
	if len(p.TrustDomains) == 0 {
		return fmt.Errorf("policy: at least one trust domain is required")
	}
	for _, td := range p.TrustDomains {
		if _, err := identifier.Parse("wimse://" + td + "/x"); err != nil {
			return fmt.Errorf("policy: trust domain %q: %w", td, err)
		}
	}
	if len(p.AllowedAlgs) == 0 {
		p.AllowedAlgs = slices.Clone(DefaultAllowedAlgs)
	}
	for _, a := range p.AllowedAlgs {
		if err := keys.CheckSignatureAlg(a); err != nil {
			return fmt.Errorf("policy: allowed alg: %w", err)
		}
	}
	if p.MaxLifetime <= 0 {
		p.MaxLifetime = DefaultMaxLifetime
	}
	if p.DefaultLifetime <= 0 {
		p.DefaultLifetime = p.MaxLifetime
	}
	if p.DefaultLifetime > p.MaxLifetime {
		return fmt.Errorf("policy: default lifetime %s exceeds the maximum %s", p.DefaultLifetime, p.MaxLifetime)
	}
	for _, r := range p.Rules {
		for _, pre := range []string{r.FromPrefix, r.ToPrefix} {
			if err := checkPrefix(pre); err != nil {
				return fmt.Errorf("policy rule: %w", err)
			}
		}
	}
	return nil
}

// checkPrefix requires scheme://trust-domain/ and, if longer, whole path segments
// ending in "/": the prefix plus any segment must be a canonical identifier.
func checkPrefix(pre string) error {
	if !strings.HasSuffix(pre, "/") {
		return fmt.Errorf("prefix %q must end in \"/\"", pre)
	}
	if _, err := identifier.Parse(pre + "x"); err != nil {
		return fmt.Errorf("prefix %q: %w", pre, err)
	}
	return nil
}

// CheckAlg refuses a confirmation-key algorithm the policy does not allow.
func (p *Policy) CheckAlg(alg string) error {
	if !slices.Contains(p.AllowedAlgs, alg) {
		return errcode.New(errcode.AlgNotAllowed, "key algorithm %q is not allowed by policy", errcode.Cut(alg))
	}
	return nil
}

// Lifetime returns the lifetime of the WIT for a requested ttl (zero: the default).
func (p *Policy) Lifetime(requested time.Duration) (time.Duration, error) {
	if requested <= 0 {
		return p.DefaultLifetime, nil
	}
	if requested > p.MaxLifetime {
		return 0, errcode.New(errcode.LifetimeTooLong, "requested lifetime %s exceeds the maximum %s", requested, p.MaxLifetime)
	}
	return requested, nil
}

// Subject returns the subject to certify for identity. With no request, it is the
// identity itself; a requested subject must be the identity or the image of the
// identity under a rule. Either way it must lie in one of the issuer's trust domains.
// Comparison is over whole canonical identifiers (identifier-03 section 4.3).
func (p *Policy) Subject(identity, requested identifier.ID) (identifier.ID, error) {
	if identity.IsZero() {
		return identifier.ID{}, errcode.New(errcode.Unauthenticated, "no authenticated identity")
	}
	sub := identity
	if !requested.IsZero() && !requested.Equal(identity) {
		if !p.mapped(identity, requested) {
			return identifier.ID{}, errcode.New(errcode.SubjectNotAllowed, "%s may not obtain %s", identity, requested)
		}
		sub = requested
	}
	if sub.Path() == "" {
		// spiffe://td names the trust domain itself, not a workload in it.
		return identifier.ID{}, errcode.New(errcode.SubjectNotAllowed, "%s is a trust domain, not a workload", sub)
	}
	if !slices.Contains(p.TrustDomains, sub.TrustDomain()) {
		return identifier.ID{}, errcode.New(errcode.SubjectNotAllowed, "%s is outside the trust domains of this issuer", sub)
	}
	return sub, nil
}

func (p *Policy) mapped(identity, requested identifier.ID) bool {
	id, want := identity.String(), requested.String()
	for _, r := range p.Rules {
		if rest, ok := strings.CutPrefix(id, r.FromPrefix); ok && want == r.ToPrefix+rest {
			return true
		}
	}
	return false
}
