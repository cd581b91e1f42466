package handoff

import (
	"context"
	"slices"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// DefaultMaxChainLength is the maximum number of earlier offers in a chain (section
// 5.5, check 7: "A limit of 16 is RECOMMENDED").
const DefaultMaxChainLength = 16

// ChainPolicy is local policy for chains (section 5.1 step 6, section 5.5, 8.3).
type ChainPolicy struct {
	// MaxLength bounds the number of chain elements (default DefaultMaxChainLength).
	// A longer chain is rejected with too-deep before any element is parsed.
	MaxLength int
	// RequireFull rejects (reason policy) an offer whose chain is partial (it does not
	// reach the start), unverifiable (a key is not trusted), or absent while the offer
	// names a prev.
	RequireFull bool
	// TrustedOrigins, when not empty, implies RequireFull and also requires the first
	// offer of the chain (or the offer itself when it starts the chain) to be issued by
	// one of these agents (section 8.3).
	TrustedOrigins []string
	// AllowReentry admits a known re-entry of agent (section 5.5, check 6: "local policy
	// MAY admit a known re-entry, such as a callback to the original requester"):
	// agent may then appear as iss more than once, and the receiver itself may appear
	// in earlier offers when it is agent. nil admits none.
	AllowReentry func(agent string) bool
}

func (p ChainPolicy) maxLength() int {
	if p.MaxLength > 0 {
		return p.MaxLength
	}
	return DefaultMaxChainLength
}

// ChainResult describes the chain of an offer after section 5.5.
type ChainResult struct {
	// Carried is true when the Handoff carried a chain.
	Carried bool
	// Length is the number of chain elements.
	Length int
	// Partial is true when the chain does not reach the start: C[0] has a prev (check
	// 5), or no chain was carried although the offer has a prev.
	Partial bool
	// Unverifiable is true when the receiver trusts no key for some element's iss; the
	// chain is then unverifiable from that element back (check 1).
	Unverifiable bool
	// VerifiedFrom is the index of the oldest element from which every element's
	// signature was verified (Length when none was).
	VerifiedFrom int
	// Origin is the iss of the first offer when the chain reaches the start and is
	// verified: C[0].iss, or the offer's own iss when it starts the chain. "" otherwise.
	Origin string
	// Offers are the decoded chain elements, oldest first. Only Offers[VerifiedFrom:]
	// are authenticated.
	Offers []*Offer
	// Reentries lists the agents that appeared more than once and were admitted by
	// ChainPolicy.AllowReentry.
	Reentries []string
}

// Full reports whether the chain reaches the start and every element verified.
func (c *ChainResult) Full() bool { return !c.Partial && !c.Unverifiable }

// chainChecker carries what section 5.5 needs besides the chain.
type chainChecker struct {
	trust   Trust
	self    string
	skew    time.Duration
	maxElem int
	policy  ChainPolicy
}

// check runs section 5.5 over chain with o as C[n], then the chain policy of step 6.
// Errors carry the reasons broken-chain, cycle, too-deep or policy, or are Incomplete.
func (c *chainChecker) check(ctx context.Context, o *VerifiedOffer, chain []Signed) (*ChainResult, error) {
	n := len(chain)
	res := &ChainResult{Carried: chain != nil, Length: n, VerifiedFrom: n}
	// Check 7 first: a chain that is too long is refused before any of it is parsed
	// or verified (section 8.8, resource use).
	if n > c.policy.maxLength() {
		return res, reject(ReasonTooDeep, "chain of %d offers, limit %d", n, c.policy.maxLength())
	}
	if n == 0 {
		res.Partial = o.Prev != nil
		if !res.Partial {
			res.Origin = o.Iss
		}
		return res, c.applyPolicy(res, o)
	}

	// Check 1: each element's signed form, v and type, then its signature, newest
	// first. An element whose iss has no trusted key makes the chain unverifiable from
	// there back; nothing older is verified.
	els := make([]*element, n)
	res.Offers = make([]*Offer, n)
	for i, s := range chain {
		e, err := parseElement(s, "offer", c.maxElem)
		if err != nil {
			return res, rejectWrap(ReasonBrokenChain, err, "chain element %d", i)
		}
		els[i], res.Offers[i] = e, e.offer
	}
	for i := n - 1; i >= 0; i-- {
		if _, err := els[i].verify(ctx, c.trust); err != nil {
			untrusted, incomplete := keyFailure(err)
			if incomplete {
				return res, err
			}
			if untrusted {
				res.Unverifiable = true
				break
			}
			return res, rejectWrap(ReasonBrokenChain, err, "chain element %d signature", i)
		}
		res.VerifiedFrom = i
	}

	at := func(i int) *Offer {
		if i == n {
			return o.Offer
		}
		return els[i].offer
	}
	// Check 2: each prev is the handoff digest of the element before it. A prev whose
	// alg is not implemented counts as failed (section 2).
	for i := 1; i <= n; i++ {
		p := at(i).Prev
		if p == nil {
			return res, reject(ReasonBrokenChain, "offer %d has no prev but follows offer %d", i, i-1)
		}
		match, ok := digestMatches(*p, chain[i-1].Octets)
		if !ok || !match {
			return res, reject(ReasonBrokenChain, "prev of offer %d is not the digest of offer %d", i, i-1)
		}
	}
	// Check 3: continuity.
	for i := 1; i <= n; i++ {
		if at(i-1).Aud != at(i).Iss {
			return res, reject(ReasonBrokenChain, "offer %d went to %q but offer %d is from %q", i-1, at(i-1).Aud, i, at(i).Iss)
		}
	}
	// Check 4: timing. Each offer was issued no earlier than the one before it, and
	// while that one was live (plus skew).
	skew := int64(c.skew / time.Second)
	for i := 1; i <= n; i++ {
		prev, cur := at(i-1), at(i)
		if prev.Iat > cur.Iat {
			return res, reject(ReasonBrokenChain, "offer %d was issued before offer %d", i, i-1)
		}
		if cur.Iat > satAdd(prev.Exp, skew) {
			return res, reject(ReasonBrokenChain, "offer %d was issued after offer %d expired", i, i-1)
		}
	}
	// Check 5: a chain whose oldest offer names a prev does not reach the start.
	res.Partial = at(0).Prev != nil
	if !res.Partial && !res.Unverifiable {
		res.Origin = at(0).Iss
	}
	// Check 6: cycles.
	if err := c.cycle(res, n, at); err != nil {
		return res, err
	}
	return res, c.applyPolicy(res, o)
}

func (c *chainChecker) cycle(res *ChainResult, n int, at func(int) *Offer) error {
	admit := func(agent string) bool {
		if c.policy.AllowReentry != nil && c.policy.AllowReentry(agent) {
			if !slices.Contains(res.Reentries, agent) {
				res.Reentries = append(res.Reentries, agent)
			}
			return true
		}
		return false
	}
	seen := make(map[string]struct{}, n+1)
	for i := 0; i <= n; i++ {
		iss := at(i).Iss
		if _, dup := seen[iss]; dup && !admit(iss) {
			return reject(ReasonCycle, "%q issues more than one offer of the chain", iss)
		}
		seen[iss] = struct{}{}
	}
	for i := 0; i < n; i++ {
		if (at(i).Iss == c.self || at(i).Aud == c.self) && !admit(c.self) {
			return reject(ReasonCycle, "the chain already passed through this agent (offer %d)", i)
		}
	}
	return nil
}

func (c *chainChecker) applyPolicy(res *ChainResult, o *VerifiedOffer) error {
	full := c.policy.RequireFull || len(c.policy.TrustedOrigins) > 0
	if !full {
		return nil
	}
	switch {
	case !res.Carried && o.Prev != nil:
		return reject(ReasonPolicy, "a full chain is required and none was carried")
	case res.Partial:
		return reject(ReasonPolicy, "a full chain is required and this one does not reach the start")
	case res.Unverifiable:
		return reject(ReasonPolicy, "a full, verified chain is required and an element's key is not trusted")
	}
	if len(c.policy.TrustedOrigins) > 0 && !slices.Contains(c.policy.TrustedOrigins, res.Origin) {
		return reject(ReasonPolicy, "the chain starts at %q, not at a trusted origin", res.Origin)
	}
	return nil
}

// VerifyChain checks a Handoff's offer (step 1 of section 5.1) and its chain (section
// 5.5 with the chain policy of step 6), without audience, freshness, replay or store:
// what a party that only needs provenance checks. self is the verifier's own AgentId
// (for check 6).
func VerifyChain(ctx context.Context, trust Trust, self string, h *Handoff, policy ChainPolicy, skew time.Duration, maxElementSize int) (*VerifiedOffer, *ChainResult, error) {
	if h == nil {
		return nil, nil, errcode.New(errcode.InvalidRequest, "no handoff")
	}
	vo, err := VerifyOffer(ctx, trust, h.Offer, maxElementSize)
	if err != nil {
		return nil, nil, err
	}
	cc := &chainChecker{trust: trust, self: self, skew: skew, maxElem: maxElementSize, policy: policy}
	res, err := cc.check(ctx, vo, h.Chain)
	return vo, res, err
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > (1<<63-1)-b {
		return 1<<63 - 1
	}
	return a + b
}
