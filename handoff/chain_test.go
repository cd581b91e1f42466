package handoff

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

func path(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = agentID(i)
	}
	return ids
}

// Section 5.5: a full chain verifies, reaches the start and names its origin.
func TestSec5_5_ValidChain(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, offers := w.chain(user, planner, tester, coder)
		r, _ := w.receiver(coder, WithChainPolicy(ChainPolicy{TrustedOrigins: []string{user}}))
		d, err := receive(r, h)
		wantAccept(t, d, err)
		c := d.Chain
		if !c.Carried || c.Length != 2 || !c.Full() || c.Origin != user || c.VerifiedFrom != 0 || c.Offers[1].Hop != offers[1].Hop {
			t.Fatalf("chain %+v", c)
		}
	})
}

// Section 5.5, check 2: removing, reordering or inserting an element breaks the chain.
func TestSec5_5_RemovedReorderedInsertedElement(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, _ := w.chain(path(6)...)
		foreign, _ := w.chain(agentID(0), agentID(1), agentID(2))
		cases := map[string][]Signed{
			"removed middle":   slices.Delete(slices.Clone(h.Chain), 2, 3),
			"removed last":     h.Chain[:len(h.Chain)-1],
			"reordered":        {h.Chain[0], h.Chain[2], h.Chain[1], h.Chain[3]},
			"swapped ends":     {h.Chain[3], h.Chain[1], h.Chain[2], h.Chain[0]},
			"inserted":         slices.Insert(slices.Clone(h.Chain), 2, foreign.Chain[0]),
			"inserted copy":    slices.Insert(slices.Clone(h.Chain), 2, h.Chain[1]),
			"replaced":         {h.Chain[0], foreign.Offer, h.Chain[2], h.Chain[3]},
			"appended":         append(slices.Clone(h.Chain), h.Offer),
			"element modified": {h.Chain[0], h.Chain[1], flip(h.Chain[2]), h.Chain[3]},
		}
		for name, chain := range cases {
			r, _ := w.receiver(agentID(5))
			d, err := receive(r, &Handoff{Offer: h.Offer, Chain: chain})
			if d.Reason != ReasonBrokenChain {
				t.Errorf("%s: %s (%v), want broken-chain", name, d.Reason, err)
			}
		}
		r, _ := w.receiver(agentID(5))
		d, err := receive(r, h)
		wantAccept(t, d, err)
		// Dropping the start is not detectable (section 8.3): the chain is partial.
		r, _ = w.receiver(agentID(5))
		d, err = receive(r, &Handoff{Offer: h.Offer, Chain: h.Chain[1:]})
		wantAccept(t, d, err)
		if !d.Chain.Partial {
			t.Fatal("a chain without its first element is not partial")
		}
	})
}

func flip(s Signed) Signed {
	b := bytes.Clone(s.Octets)
	b[len(b)/2] ^= 0x01
	if b[len(b)/2] == '.' || s.Octets[len(b)/2] == '.' {
		b[len(b)/2+1] ^= 0x01
	}
	return Signed{Form: s.Form, Octets: b}
}

// Section 5.5, checks 3 and 4: continuity and timing, with links intact.
func TestSec5_5_ContinuityAndTiming(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		now := w.clock.Now().Unix()
		build := func(first *Offer, mod func(o *Offer)) *Handoff {
			s0 := w.sign(first)
			o := w.newOffer(planner, coder)
			d := s0.Digest()
			o.Prev = &d
			if mod != nil {
				mod(o)
			}
			return &Handoff{Offer: w.sign(o), Chain: []Signed{s0}}
		}
		base := func() *Offer {
			return &Offer{Hop: NewHopID(), Dialog: "ctx-7c1e", Iss: user, Aud: planner, Iat: now - 10, Exp: now + 100}
		}
		for name, tc := range map[string]struct {
			h      *Handoff
			reason Reason
		}{
			"continuous":                 {build(base(), nil), ""},
			"aud is not next iss":        {build(func() *Offer { o := base(); o.Aud = tester; return o }(), nil), ReasonBrokenChain},
			"issued before the previous": {build(func() *Offer { o := base(); o.Iat = now + 1; o.Exp = now + 100; return o }(), nil), ReasonBrokenChain},
			"issued after the previous expired": {build(func() *Offer {
				o := base()
				o.Iat, o.Exp = now-200, now-100
				return o
			}(), nil), ReasonBrokenChain},
			"issued within skew after expiry": {build(func() *Offer {
				o := base()
				o.Iat, o.Exp = now-200, now-30
				return o
			}(), nil), ""},
			"no prev": {build(base(), func(o *Offer) { o.Prev = nil }), ReasonBrokenChain},
		} {
			r, _ := w.receiver(coder)
			d, err := receive(r, tc.h)
			if d.Reason != tc.reason {
				t.Errorf("%s: %s (%v), want %q", name, d.Reason, err, tc.reason)
			}
		}
	})
}

// Section 5.5, check 6: a cycle, and a known re-entry that policy admits.
func TestSec5_5_Cycle(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		// planner appears twice as iss.
		h, _ := w.chain(user, planner, tester, planner, coder)
		r, _ := w.receiver(coder)
		d, err := receive(r, h)
		wantReject(t, d, err, ReasonCycle)
		// The receiver itself appears earlier (as aud, then as iss).
		h, _ = w.chain(user, coder, tester, coder)
		r, _ = w.receiver(coder)
		d, err = receive(r, h)
		wantReject(t, d, err, ReasonCycle)
		h, _ = w.chain(coder, tester, planner, coder)
		r, _ = w.receiver(coder)
		d, err = receive(r, h)
		wantReject(t, d, err, ReasonCycle)
		// A callback to the original requester, admitted by policy.
		h, _ = w.chain(user, planner, tester, user)
		r, _ = w.receiver(user, WithChainPolicy(ChainPolicy{AllowReentry: func(a string) bool { return a == user }}))
		d, err = receive(r, h)
		wantAccept(t, d, err)
		if !slices.Equal(d.Chain.Reentries, []string{user}) {
			t.Fatalf("reentries %v", d.Chain.Reentries)
		}
		// The same policy does not admit another agent's loop.
		h, _ = w.chain(user, planner, tester, planner, coder)
		r, _ = w.receiver(coder, WithChainPolicy(ChainPolicy{AllowReentry: func(a string) bool { return a == user }}))
		d, err = receive(r, h)
		wantReject(t, d, err, ReasonCycle)
	})
}

// Section 5.5, check 7: a maximum chain length, 16 by default; a chain of 17 is too
// deep, and is refused before any element is parsed (section 8.8).
func TestSec5_5_ChainOf17TooDeep(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, _ := w.chain(path(19)...) // 17 earlier offers plus the current one
		if len(h.Chain) != 17 {
			t.Fatal(len(h.Chain))
		}
		r, _ := w.receiver(agentID(18))
		d, err := receive(r, h)
		wantReject(t, d, err, ReasonTooDeep)
		// Garbage elements do not change that: the length is checked first.
		junk := make([]Signed, 17)
		for i := range junk {
			junk[i] = Signed{Form: JWS, Octets: []byte("a.b.c")}
		}
		r, _ = w.receiver(agentID(18))
		d, err = receive(r, &Handoff{Offer: h.Offer, Chain: junk})
		wantReject(t, d, err, ReasonTooDeep)
		// 16 is fine.
		h16, _ := w.chain(path(18)...)
		r, _ = w.receiver(agentID(17))
		d, err = receive(r, h16)
		wantAccept(t, d, err)
		// A configured maximum.
		r, _ = w.receiver(agentID(17), WithChainPolicy(ChainPolicy{MaxLength: 8}))
		d, err = receive(r, h16)
		wantReject(t, d, err, ReasonTooDeep)
	})
}

// Section 5.5, check 5 and step 6 policy: partial chains are accepted unless policy
// requires a full one; a removed chain counts as absent.
func TestSec5_5_PartialChains(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, _ := w.chain(path(5)...)
		partial := &Handoff{Offer: h.Offer, Chain: h.Chain[2:]}
		absent := &Handoff{Offer: h.Offer}
		for name, hh := range map[string]*Handoff{"partial": partial, "absent": absent} {
			r, _ := w.receiver(agentID(4))
			d, err := receive(r, hh)
			wantAccept(t, d, err)
			if !d.Chain.Partial || d.Chain.Full() || d.Chain.Origin != "" {
				t.Fatalf("%s: %+v", name, d.Chain)
			}
			r, _ = w.receiver(agentID(4), WithChainPolicy(ChainPolicy{RequireFull: true}))
			d, err = receive(r, hh)
			wantReject(t, d, err, ReasonPolicy)
		}
		// An offer that starts a chain is a full chain of its own.
		r, _ := w.receiver(coder, WithChainPolicy(ChainPolicy{RequireFull: true}))
		d, err := receive(r, &Handoff{Offer: w.sign(w.newOffer(planner, coder))})
		wantAccept(t, d, err)
		if d.Chain.Origin != planner || d.Chain.Carried {
			t.Fatalf("%+v", d.Chain)
		}
	})
}

// Section 5.5, check 1: an element whose iss has no trusted key makes the chain
// unverifiable from that point back; the partial-chain policy then applies. A bad
// signature under a trusted key breaks the chain.
func TestSec5_5_UntrustedKeyMakesChainUnverifiable(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ids := path(5)
		h, offers := w.chain(ids...)
		// Re-sign element 1 with a key nobody trusts, and rebuild the links above it.
		nk := w.untrustedKey()
		chain := slices.Clone(h.Chain)
		chain[1] = w.signWith(nk, offers[1])
		for i := 2; i < len(offers); i++ {
			d := chain[i-1].Digest()
			if i < len(chain) {
				offers[i].Prev = &d
				chain[i] = w.sign(offers[i])
			}
		}
		last := *offers[len(offers)-1]
		d := chain[len(chain)-1].Digest()
		last.Prev = &d
		hh := &Handoff{Offer: w.sign(&last), Chain: chain}
		r, _ := w.receiver(ids[4])
		dec, err := receive(r, hh)
		wantAccept(t, dec, err)
		if !dec.Chain.Unverifiable || dec.Chain.VerifiedFrom != 2 || dec.Chain.Full() {
			t.Fatalf("chain %+v", dec.Chain)
		}
		r, _ = w.receiver(ids[4], WithChainPolicy(ChainPolicy{RequireFull: true}))
		dec, err = receive(r, hh)
		wantReject(t, dec, err, ReasonPolicy)
		// A trusted key with a bad signature: broken (check 1 fails before the link).
		hb, _ := w.chain(ids...)
		hb.Chain[1] = flipSignature(hb.Chain[1])
		r, _ = w.receiver(ids[4])
		dec, err = receive(r, hb)
		if !strings.Contains(err.Error(), "chain element 1 signature") {
			t.Fatalf("not reported by check 1: %v", err)
		}
		wantReject(t, dec, err, ReasonBrokenChain)
	})
}

// Section 8.3: a receiver that needs the origin requires a full chain whose first
// element is signed by an origin it trusts.
func TestSec8_3_TruncatedChainsAndTrustedOrigin(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, _ := w.chain(user, planner, coder)
		pol := WithChainPolicy(ChainPolicy{TrustedOrigins: []string{user}})
		r, _ := w.receiver(coder, pol)
		d, err := receive(r, h)
		wantAccept(t, d, err)
		// The planner drops prev and the chain and presents itself as the start: still
		// a valid offer, but not from the trusted origin.
		o := w.newOffer(planner, coder)
		r, _ = w.receiver(coder, pol)
		d, err = receive(r, &Handoff{Offer: w.sign(o)})
		wantReject(t, d, err, ReasonPolicy)
		r, _ = w.receiver(coder)
		d, err = receive(r, &Handoff{Offer: w.sign(w.newOffer(planner, coder))})
		wantAccept(t, d, err)
		// Another origin.
		h2, _ := w.chain(tester, planner, coder)
		r, _ = w.receiver(coder, pol)
		d, err = receive(r, h2)
		wantReject(t, d, err, ReasonPolicy)
	})
}

// Section 8.8: element sizes are bounded; an oversized offer is refused before it is
// parsed, an oversized chain element breaks the chain.
func TestSec8_8_ElementSizeBounded(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		o := w.newOffer(planner, coder)
		o.Extra = map[string]any{"pad": string(bytes.Repeat([]byte("x"), 2000))}
		big := w.sign(o)
		r, _ := w.receiver(coder, WithMaxElementSize(1024))
		d, err := receive(r, &Handoff{Offer: big})
		wantReject(t, d, err, ReasonBadSignature)
		if !hasCause(err, errcode.TokenTooLong) {
			t.Fatal(err)
		}
		h, offers := w.chain(user, planner, coder)
		offers[0].Extra = map[string]any{"pad": string(bytes.Repeat([]byte("x"), 2000))}
		h.Chain[0] = w.sign(offers[0])
		offers[1].Prev = ptrDigest(h.Chain[0].Digest())
		h.Offer = w.sign(offers[1])
		r, _ = w.receiver(coder, WithMaxElementSize(1024))
		d, err = receive(r, h)
		wantReject(t, d, err, ReasonBrokenChain)
		r, _ = w.receiver(coder)
		d, err = receive(r, h)
		wantAccept(t, d, err)
	})
}

// flipSignature changes the last signature octet of a signed handoff.
func flipSignature(s Signed) Signed {
	if s.Form == JWS {
		raw := string(s.Octets)
		i := strings.LastIndexByte(raw, '.')
		sig, _ := b64.DecodeString(raw[i+1:])
		sig[len(sig)-1] ^= 1
		return Signed{Form: JWS, Octets: []byte(raw[:i+1] + b64.EncodeToString(sig))}
	}
	b := bytes.Clone(s.Octets)
	b[len(b)-1] ^= 1 // the signature is the last item of the array
	return Signed{Form: COSE, Octets: b}
}

func ptrDigest(d Digest) *Digest { return &d }

// VerifyChain is the store-free provenance check.
func TestVerifyChainStandalone(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, _ := w.chain(user, planner, coder)
		vo, res, err := VerifyChain(t.Context(), w.trust, coder, h, ChainPolicy{}, time.Minute, 0)
		if err != nil || vo.Iss != planner || !res.Full() {
			t.Fatalf("%v %+v", err, res)
		}
	})
}

// Section 5.5, checks 2, 3 and 4, each broken alone: in every case the other checks
// (and check 1, 5, 6 and 7) pass, so each case fails only through its own check. The
// chain is user -> planner, and the offer planner -> coder.
func TestSec5_5_ChecksTwoThreeFourEachAlone(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		now := w.clock.Now().Unix()
		first := func() *Offer {
			return &Offer{Hop: NewHopID(), Dialog: "ctx-7c1e", Iss: user, Aud: planner, Iat: now - 10, Exp: now + 100}
		}
		// build signs c0, then the planner's offer whose prev names named (c0 when nil),
		// and carries c0 as the chain.
		build := func(c0 *Offer, named *Signed) *Handoff {
			s0 := w.sign(c0)
			if named == nil {
				named = &s0
			}
			o := w.newOffer(planner, coder)
			o.Prev = ptrDigest(named.Digest())
			return &Handoff{Offer: w.sign(o), Chain: []Signed{s0}}
		}
		// Check 2 alone: prev names another offer from the same iss to the same aud,
		// issued at the same time, so continuity and timing still hold.
		sibling := w.sign(first())
		// Check 3 alone: the earlier offer went to the tester; prev and timing hold.
		elsewhere := first()
		elsewhere.Aud = tester
		// Check 4 alone: the earlier offer was issued after the current one; prev and
		// continuity hold.
		later := first()
		later.Iat, later.Exp = now+1, now+100
		for name, tc := range map[string]struct {
			h    *Handoff
			want Reason
		}{
			"control: every check passes":    {build(first(), nil), ""},
			"check 2: prev names a sibling":  {build(first(), &sibling), ReasonBrokenChain},
			"check 3: aud is not next iss":   {build(elsewhere, nil), ReasonBrokenChain},
			"check 4: issued before earlier": {build(later, nil), ReasonBrokenChain},
		} {
			r, _ := w.receiver(coder)
			d, err := receive(r, tc.h)
			if d.Reason != tc.want || d.Reason != "" && d.Step != 6 {
				t.Errorf("%s: %s at step %d (%v), want %q", name, d.Reason, d.Step, err, tc.want)
			}
			if tc.want == "" && (d.Chain == nil || !d.Chain.Full() || d.Chain.Origin != user) {
				t.Errorf("%s: chain %+v", name, d.Chain)
			}
		}
	})
}
