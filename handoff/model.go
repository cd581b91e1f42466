package handoff

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Names fixed by the draft.
const (
	// Version is the v of every element this package reads and writes (section 2).
	Version = 1
	// JWSType is the typ of a JWS signed handoff (section 3.1), the short form of
	// application/agent-handoff+jwt.
	JWSType = "agent-handoff+jwt"
	// ContentType is the COSE content type (label 3) of a COSE signed handoff (3.2).
	ContentType = "application/agent-handoff+cbor"
	// A2AExtensionURI is the A2A extension and Message.metadata key (section 6).
	A2AExtensionURI = "https://quantumlearningmachines.com/a2a/ext/agent-handoff/v1"
	// MCPMetaKey is the _meta key that carries the element in MCP (section 6).
	MCPMetaKey = "quantumlearningmachines.com/agent-handoff"
	// SHA256 is the one Digest alg the draft defines (section 2).
	SHA256 = "sha-256"
)

// State is a hop state (section 4). The five states a status carries are closed; the
// delegator's local states offered and expired are never sent.
type State string

// States.
const (
	StateAccepted  State = "accepted"
	StateRejected  State = "rejected"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateCanceled  State = "canceled"
	// StateOffered is the delegator's state of a hop it has offered and heard nothing of.
	StateOffered State = "offered"
	// StateExpired is the delegator's local, provisional state of an offered hop past
	// its exp (section 4). A later verified status replaces it.
	StateExpired State = "expired"
)

// Sendable reports whether s may appear in a status.
func (s State) Sendable() bool {
	switch s {
	case StateAccepted, StateRejected, StateCompleted, StateFailed, StateCanceled:
		return true
	}
	return false
}

// Reason is a rejection or failure reason (section 2). Values other than the listed
// ones are legal in a received status but are never produced here.
type Reason string

// The reasons of section 2.
const (
	ReasonBadSignature    Reason = "bad-signature"
	ReasonUntrustedKey    Reason = "untrusted-key"
	ReasonWrongAudience   Reason = "wrong-audience"
	ReasonStale           Reason = "stale"
	ReasonReplay          Reason = "replay"
	ReasonEquivocation    Reason = "equivocation"
	ReasonBrokenChain     Reason = "broken-chain"
	ReasonCycle           Reason = "cycle"
	ReasonTooDeep         Reason = "too-deep"
	ReasonUnverifiableRef Reason = "unverifiable-ref"
	ReasonRefMismatch     Reason = "ref-mismatch"
	ReasonPolicy          Reason = "policy"
)

var reasonCodes = map[Reason]errcode.Code{
	ReasonBadSignature:    errcode.HandoffBadSignature,
	ReasonUntrustedKey:    errcode.HandoffUntrustedKey,
	ReasonWrongAudience:   errcode.HandoffWrongAudience,
	ReasonStale:           errcode.HandoffStale,
	ReasonReplay:          errcode.HandoffReplay,
	ReasonEquivocation:    errcode.HandoffEquivocation,
	ReasonBrokenChain:     errcode.HandoffBrokenChain,
	ReasonCycle:           errcode.HandoffCycle,
	ReasonTooDeep:         errcode.HandoffTooDeep,
	ReasonUnverifiableRef: errcode.HandoffUnverifiableRef,
	ReasonRefMismatch:     errcode.HandoffRefMismatch,
	ReasonPolicy:          errcode.HandoffPolicy,
}

// Code returns the errcode code of a listed reason ("" for any other value).
func (r Reason) Code() errcode.Code { return reasonCodes[r] }

// Listed reports whether r is one of the twelve values section 2 lists: the only ones
// this package produces.
func (r Reason) Listed() bool { return reasonCodes[r] != "" }

// ReasonOf returns the reason that an error carries: the reason whose code it has, or
// ReasonPolicy for a grant mismatch (section 5.7 checks are local policy) and for a
// sender that is not the offer's iss (the same binding to the carrying message). It returns
// "" for an error that is not a handoff rejection.
func ReasonOf(err error) Reason {
	c := errcode.CodeOf(err)
	if c == errcode.HandoffGrantMismatch || c == errcode.HandoffSenderNotIssuer {
		return ReasonPolicy
	}
	for r, rc := range reasonCodes {
		if rc == c {
			return r
		}
	}
	return ""
}

// nonterminal reports the two rejection reasons that say only that the delegate does
// not remember a hop: they never set a hop's state (sections 4, 5.6).
func (r Reason) nonterminal() bool { return r == ReasonStale || r == ReasonReplay }

func reject(r Reason, format string, args ...any) *errcode.Error {
	return errcode.New(r.Code(), format, args...)
}

func rejectWrap(r Reason, cause error, format string, args ...any) *errcode.Error {
	return errcode.Wrap(r.Code(), cause, format, args...)
}

// Digest names octets by hash (section 2): a closed map of alg and val.
type Digest struct {
	Alg string
	Val string // base64url without padding
}

// Equal compares two digests exactly.
func (d Digest) Equal(o Digest) bool { return d.Alg == o.Alg && d.Val == o.Val }

func (d Digest) String() string { return d.Alg + ":" + d.Val }

// Principal names the principal for whom the root of a chain acted (section 5.7).
type Principal struct {
	Sub   string
	Iss   *string
	Extra map[string]any
}

// ContextRef names prior context by digest (section 2.2).
type ContextRef struct {
	Kind string
	Dig  Digest
	Loc  *string
	// Proof is kind-specific material, decoded as a generic value (see Extra). nil means
	// absent; a present null is Null{}.
	Proof any
	Extra map[string]any
}

// The reference kinds the draft names.
const (
	KindDigest       = "digest"
	KindSaltedDigest = "salted-digest"
	KindSCITTReceipt = "scitt-receipt"
	KindLearnlogHead = "learnlog-head"
)

// Null stands for a present JSON or CBOR null where absence and null differ (a proof).
type Null struct{}

// Offer is a HandoffOffer (section 2). v and type are implied: they are checked when
// decoding and written when encoding.
//
// Extra holds the members this implementation does not understand (section 2: a
// receiver ignores them, a forwarder keeps them), as generic values: from JSON, nil,
// bool, json.Number, string, []any and map[string]any; from CBOR, what
// fxamacker/cbor decodes into an any (uint64, int64, []byte, map[any]any, cbor.Tag ...).
// They are re-encoded when the element is encoded again, converted when the encoding
// changes (a CBOR byte string becomes base64url text in JSON).
type Offer struct {
	Hop    string
	Dialog string
	Task   *string
	Iss    string
	Aud    string
	Iat    int64
	Exp    int64
	Obo    *Principal
	Grant  *Digest
	Prev   *Digest
	Refs   []ContextRef // nil when absent; never empty when present
	Extra  map[string]any
}

// Status is a HandoffStatus (section 2).
type Status struct {
	Hop    string
	Offer  Digest
	Iss    string
	Aud    string
	Iat    int64
	State  State
	Reason *Reason
	Detail *string
	Refs   []ContextRef
	Extra  map[string]any
}

// ReasonValue returns the reason, or "" when absent.
func (s *Status) ReasonValue() Reason {
	if s.Reason == nil {
		return ""
	}
	return *s.Reason
}

// String returns a pointer to s, for the optional text members.
func String(s string) *string { return &s }

// NewHopID returns a hop identifier: 128 bits from crypto/rand, base64url without
// padding (22 characters; section 2).
func NewHopID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Members of each map, in the order this package writes them (the order of the CDDL).
var (
	offerMembers     = []string{"v", "type", "hop", "dialog", "task", "iss", "aud", "iat", "exp", "obo", "grant", "prev", "refs"}
	statusMembers    = []string{"v", "type", "hop", "offer", "iss", "aud", "iat", "state", "reason", "detail", "refs"}
	principalMembers = []string{"sub", "iss"}
	refMembers       = []string{"kind", "dig", "loc", "proof"}
	handoffMembers   = []string{"offer", "chain"}
)

func reserved(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// invalid is the error of a data-model violation. Inside a signed element, callers turn
// it into the reason of the step that checks it.
func invalid(format string, args ...any) *errcode.Error {
	return errcode.New(errcode.InvalidClaim, format, args...)
}

// validHopID checks HopId = text .regexp "[A-Za-z0-9_-]{22,64}" (anchored, as CDDL
// regexps are).
func validHopID(s string) bool {
	return len(s) >= 22 && len(s) <= 64 && isB64u(s)
}

// isB64u checks B64u = text .regexp "[A-Za-z0-9_-]+".
func isB64u(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isJWSCompact checks JwsCompact: three non-empty B64u segments joined by periods.
func isJWSCompact(s string) bool {
	a, rest, ok1 := strings.Cut(s, ".")
	b, c, ok2 := strings.Cut(rest, ".")
	return ok1 && ok2 && isB64u(a) && isB64u(b) && isB64u(c)
}

// Validate checks the digest against the CDDL and section 2: val is base64url text, and
// since no hash may be shorter than 256 bits, it decodes to at least 32 octets (exactly
// 32 for sha-256).
func (d Digest) Validate() error {
	if d.Alg == "" {
		return invalid("digest alg is empty")
	}
	if !isB64u(d.Val) {
		return invalid("digest val is not base64url")
	}
	// Only the length and the encoding matter here: decode into a stack buffer when the
	// value is a SHA-256 one, as every digest on the hot path is.
	var buf [32]byte
	n := base64.RawURLEncoding.DecodedLen(len(d.Val))
	var err error
	if n == 32 {
		n, err = base64.RawURLEncoding.Strict().Decode(buf[:], []byte(d.Val))
	} else {
		var raw []byte
		raw, err = base64.RawURLEncoding.Strict().DecodeString(d.Val)
		n = len(raw)
	}
	if err != nil {
		return invalid("digest val is not base64url without padding")
	}
	if n < 32 || d.Alg == SHA256 && n != 32 {
		return invalid("digest val is %d octets: a %s digest is the full hash output of at least 256 bits", n, d.Alg)
	}
	return nil
}

func (p *Principal) validate() error {
	for k := range p.Extra {
		if reserved(principalMembers, k) {
			return invalid("obo extra member %q shadows a defined member", k)
		}
	}
	return nil
}

// Validate checks a reference: its digest, and that a kind the draft does not define
// is an absolute URI (section 2.2).
func (r *ContextRef) Validate() error {
	switch r.Kind {
	case KindDigest, KindSaltedDigest, KindSCITTReceipt, KindLearnlogHead:
	default:
		if !isAbsoluteURI(r.Kind) {
			return invalid("reference kind %q is neither defined nor an absolute URI", r.Kind)
		}
	}
	if err := r.Dig.Validate(); err != nil {
		return err
	}
	// Section 2.2: "The salt MUST NOT appear in the element". A salt member is how it
	// would appear; refused in every reference, whatever its kind.
	if _, ok := r.Extra["salt"]; ok {
		return invalid("reference carries a salt member: the salt MUST NOT appear in the element (section 2.2)")
	}
	for k := range r.Extra {
		if reserved(refMembers, k) {
			return invalid("reference extra member %q shadows a defined member", k)
		}
	}
	return nil
}

// isAbsoluteURI checks RFC 3986 absolute-URI closely enough to tell a URI from a word:
// a scheme (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )), a colon, no fragment, and
// no whitespace or control characters.
func isAbsoluteURI(s string) bool {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || rest == "" || strings.ContainsAny(s, "# \t\r\n") {
		return false
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		alpha := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !alpha && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func validateRefs(refs []ContextRef) error {
	if refs != nil && len(refs) == 0 {
		return invalid("refs is present but empty ([+ ContextRef])")
	}
	for i := range refs {
		if err := refs[i].Validate(); err != nil {
			return fmt.Errorf("refs[%d]: %w", i, err)
		}
	}
	return nil
}

// Validate checks an offer against the CDDL of section 2.
func (o *Offer) Validate() error {
	if !validHopID(o.Hop) {
		return invalid("hop %q does not match [A-Za-z0-9_-]{22,64}", o.Hop)
	}
	if o.Iat < 0 || o.Exp < 0 {
		return invalid("iat and exp are unsigned")
	}
	if o.Obo != nil {
		if err := o.Obo.validate(); err != nil {
			return err
		}
	}
	for _, d := range []*Digest{o.Grant, o.Prev} {
		if d != nil {
			if err := d.Validate(); err != nil {
				return err
			}
		}
	}
	if err := validateRefs(o.Refs); err != nil {
		return err
	}
	for k := range o.Extra {
		if reserved(offerMembers, k) {
			return invalid("extra member %q shadows a defined member", k)
		}
	}
	return nil
}

// Validate checks a status against the CDDL of section 2.
func (s *Status) Validate() error {
	if !validHopID(s.Hop) {
		return invalid("hop %q does not match [A-Za-z0-9_-]{22,64}", s.Hop)
	}
	if err := s.Offer.Validate(); err != nil {
		return err
	}
	if s.Iat < 0 {
		return invalid("iat is unsigned")
	}
	if !s.State.Sendable() {
		return invalid("state %q is not one of accepted, rejected, completed, failed, canceled", s.State)
	}
	if err := validateRefs(s.Refs); err != nil {
		return err
	}
	for k := range s.Extra {
		if reserved(statusMembers, k) {
			return invalid("extra member %q shadows a defined member", k)
		}
	}
	return nil
}
