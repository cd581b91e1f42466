package jose

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/keys"
)

// DefaultMaxTokenSize bounds a compact token (16 KiB).
const DefaultMaxTokenSize = 16 << 10

// Header is the protected header dialogtrust writes, in this member order.
type Header struct {
	Typ string `json:"typ,omitempty"`
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
}

// Sign returns the compact JWS of payload with header {"typ","alg","kid"} (kid omitted
// when withKID is false), signed by key with its one algorithm. The payload octets are
// used exactly as given.
func Sign(typ string, key *keys.PrivateKey, withKID bool, payload []byte) (string, error) {
	h := Header{Typ: typ, Alg: key.Alg()}
	if withKID {
		h.Kid = key.KID()
	}
	eh, err := signHeaders.encoded(h)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	buf := make([]byte, 0, len(eh)+enc.EncodedLen(len(payload))+2+enc.EncodedLen(64))
	buf = append(buf, eh...)
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, payload)
	sig, err := key.Sign(buf)
	if err != nil {
		return "", err
	}
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, sig)
	// buf is neither kept nor written after this point, so the string can own its
	// octets without a copy (as strings.Builder does).
	return unsafe.String(unsafe.SliceData(buf), len(buf)), nil
}

// encodedHeaders remembers the base64url text of the headers Sign writes: a signer
// writes the same few headers ({"typ","alg","kid"} of its active key) on every token,
// and the text is a pure function of the three strings. Bounded; on overflow it starts
// afresh.
type encodedHeaders struct {
	// last is the most recent header and its text: a signer repeats one header
	// (its active key's) token after token, and comparing three strings costs less
	// than hashing them for the map.
	last atomic.Pointer[encodedHeader]
	mu   sync.RWMutex
	m    map[Header]string
}

type encodedHeader struct {
	h    Header
	text string
}

const signHeaderCacheSize = 256

var signHeaders = &encodedHeaders{m: make(map[Header]string)}

func (c *encodedHeaders) encoded(h Header) (string, error) {
	if l := c.last.Load(); l != nil && l.h == h {
		return l.text, nil
	}
	c.mu.RLock()
	eh, ok := c.m[h]
	c.mu.RUnlock()
	if ok {
		c.last.Store(&encodedHeader{h, eh})
		return eh, nil
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	eh = base64.RawURLEncoding.EncodeToString(hb)
	if len(h.Typ)+len(h.Alg)+len(h.Kid) > maxCachedHeader {
		return eh, nil
	}
	c.mu.Lock()
	if len(c.m) >= signHeaderCacheSize {
		c.m = make(map[Header]string)
	}
	c.m[h] = eh
	c.mu.Unlock()
	c.last.Store(&encodedHeader{h, eh})
	return eh, nil
}

// SignClaims marshals claims with encoding/json (struct field order) and signs them.
func SignClaims(typ string, key *keys.PrivateKey, withKID bool, claims any) (string, error) {
	p, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	return Sign(typ, key, withKID, p)
}

// Token is a parsed compact JWS. After Verify, Payload is authenticated.
type Token struct {
	Raw     string
	Alg     string
	Typ     string
	Kid     string
	Payload []byte

	header       map[string]json.RawMessage
	signingInput string
	signature    []byte
}

// HeaderMember returns a raw header member, for callers that define more of them.
func (t *Token) HeaderMember(name string) (json.RawMessage, bool) {
	v, ok := t.header[name]
	return v, ok
}

// Parse splits and decodes a compact JWS without verifying it.
func Parse(raw string, maxSize int) (*Token, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxTokenSize
	}
	if len(raw) > maxSize {
		return nil, errcode.New(errcode.TokenTooLong, "token is %d octets, limit %d", len(raw), maxSize)
	}
	h, rest, ok1 := strings.Cut(raw, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.IndexByte(s, '.') >= 0 {
		return nil, errcode.New(errcode.MalformedToken, "not a compact JWS of three parts")
	}
	// Three parts but one empty: say which, rather than that the parts are not three
	// (an empty signature is what an unsecured JWS, alg "none", looks like).
	if h == "" {
		return nil, errcode.New(errcode.MalformedToken, "compact JWS with an empty header")
	}
	if s == "" {
		return nil, errcode.New(errcode.MalformedToken, "compact JWS with an empty signature (unsigned)")
	}
	enc := base64.RawURLEncoding.Strict()
	hdr, err := headers.parse(h)
	if err != nil {
		return nil, err
	}
	// Payload and signature share one buffer, each capped at its own length.
	buf := make([]byte, enc.DecodedLen(len(p))+enc.DecodedLen(len(s)))
	np, err := enc.Decode(buf, stringView(p))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "payload is not base64url")
	}
	pb, sb := buf[:np:np], buf[np:]
	ns, err := enc.Decode(sb, stringView(s))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "signature is not base64url")
	}
	return &Token{Raw: raw, Alg: hdr.alg, Typ: hdr.typ, Kid: hdr.kid, Payload: pb,
		header: hdr.members, signingInput: raw[:len(h)+1+len(p)], signature: sb[:ns:ns]}, nil
}

// stringView views s as bytes without copying it, for functions that only read their
// argument and do not keep it (decoding, hashing, verification). The bytes must never
// be written.
func stringView(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// parsedHeader is a decoded protected header; shared read-only between tokens.
type parsedHeader struct {
	alg, typ, kid string
	members       map[string]json.RawMessage
}

// headerCache remembers decoded headers by their base64url text. Tokens of one issuer
// or one workload repeat the same header octets ({"typ":"wpt+jwt","alg":"EdDSA"} on
// every proof), and decoding them is a pure function of the text, so the JSON work is
// done once. Bounded; on overflow it starts afresh.
type headerCache struct {
	mu sync.RWMutex
	m  map[string]*parsedHeader
}

const (
	headerCacheSize = 4096
	maxCachedHeader = 512 // base64 characters
)

var headers = &headerCache{m: make(map[string]*parsedHeader)}

func (c *headerCache) parse(h string) (*parsedHeader, error) {
	c.mu.RLock()
	ph, ok := c.m[h]
	c.mu.RUnlock()
	if ok {
		return ph, nil
	}
	hb, err := base64.RawURLEncoding.Strict().DecodeString(h)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "header is not base64url")
	}
	var t Token
	if err := decodeHeader(hb, &t); err != nil {
		return nil, err
	}
	ph = &parsedHeader{alg: t.Alg, typ: t.Typ, kid: t.Kid, members: t.header}
	if len(h) > maxCachedHeader {
		return ph, nil // only ordinary headers are worth keeping; this bounds memory
	}
	c.mu.Lock()
	if len(c.m) >= headerCacheSize {
		c.m = make(map[string]*parsedHeader)
	}
	// A copy of the key: h is a substring of the token, which may itself be a
	// substring of a whole request body, none of which the cache should keep alive.
	c.m[strings.Clone(h)] = ph
	c.mu.Unlock()
	return ph, nil
}

func decodeHeader(hb []byte, t *Token) error {
	var h struct {
		Alg, Typ, Kid *string
	}
	// A member named twice is refused (RFC 7515 section 5.2 allows rejecting; accepting
	// "last wins" invites confusion between parsers).
	if err := netjson.DecodeObject(hb, &t.header); err != nil || t.header == nil {
		var dup *netjson.DuplicateError
		if errors.As(err, &dup) {
			return errcode.New(errcode.InvalidEncoding, "header member %q appears twice", dup.Name)
		}
		return errcode.New(errcode.InvalidEncoding, "header is not a JSON object")
	}
	for name, dst := range map[string]**string{"alg": &h.Alg, "typ": &h.Typ, "kid": &h.Kid} {
		v, ok := t.header[name]
		if !ok {
			continue
		}
		var s string
		if err := netjson.DecodeObject(v, &s); err != nil {
			return errcode.New(errcode.InvalidEncoding, "header %q is not a string", name)
		}
		*dst = &s
	}
	if h.Alg != nil {
		t.Alg = *h.Alg
	}
	if h.Typ != nil {
		t.Typ = *h.Typ
	}
	if h.Kid != nil {
		t.Kid = *h.Kid
	}
	return nil
}

// TypeMatches reports whether a typ header value names want (RFC 7515 section 4.1.9:
// compared case-insensitively; the "application/" prefix may be omitted).
func TypeMatches(got, want string) bool {
	if len(got) > 12 && strings.EqualFold(got[:12], "application/") {
		got = got[12:]
	}
	return strings.EqualFold(got, want)
}

// forbiddenHeaders could make a verifier take a key from the token itself.
var forbiddenHeaders = []string{"jku", "x5u", "jwk", "x5c"}

// Options says what a token must be.
type Options struct {
	// Typ is the required media type without "application/", e.g. "wit+jwt". Required.
	Typ string
	// Algs is the allow-list; empty means every algorithm package keys supports. An
	// entry admits the algorithm it names under either of its names: "EdDSA" admits
	// "Ed25519" (RFC 9864 section 2) and "Ed25519" admits "EdDSA", as VerifyWith takes
	// both for an Ed25519 key; no other name (Ed448) is admitted.
	Algs []string
	// MaxSize bounds the compact token (default DefaultMaxTokenSize).
	MaxSize int
	// ExactAlg requires the token's alg to string-equal the key's alg (the WPT rule);
	// otherwise the two names of Ed25519 ("EdDSA", "Ed25519") are the same algorithm.
	ExactAlg bool
	// AllowUntyped accepts a token without a typ header (a present typ must still be
	// Typ): for identity providers whose ID tokens carry none (Okta, Amazon Cognito), by
	// explicit configuration only. RFC 8725 section 3.11's explicit typing is the rule
	// everywhere else.
	AllowUntyped bool
	// RSA admits RS256 and PS256, for the tokens of a third-party issuer whose keys come
	// from a keys.RSAPolicy set (an IdP's subject tokens). Without it they are
	// unsupported_alg, whatever the key set holds.
	RSA bool
}

// Verify parses raw and checks it as the package documentation describes. The key comes
// from ks by the token's kid. It returns the verified token.
func Verify(ctx context.Context, raw string, opts Options, ks keys.KeySet) (*Token, error) {
	t, err := Parse(raw, opts.MaxSize)
	if err != nil {
		return nil, err
	}
	if err := t.CheckHeader(opts); err != nil {
		return nil, err
	}
	key, err := ks.LookupKey(ctx, t.Kid)
	if err != nil {
		return nil, err
	}
	if err := t.VerifyWith(key, opts.ExactAlg); err != nil {
		return nil, err
	}
	return t, nil
}

// CheckHeader applies steps 2 to 4 of Verify.
func (t *Token) CheckHeader(opts Options) error {
	if opts.Typ == "" {
		return errcode.New(errcode.WrongType, "verifier has no expected typ")
	}
	if _, ok := t.header["typ"]; ok && !TypeMatches(t.Typ, opts.Typ) || !ok && !opts.AllowUntyped {
		return errcode.New(errcode.WrongType, "typ %q, want %q", errcode.Cut(t.Typ), opts.Typ)
	}
	if _, ok := t.header["crit"]; ok {
		return errcode.New(errcode.UnsupportedCritical, "crit header is not supported")
	}
	for _, h := range forbiddenHeaders {
		if _, ok := t.header[h]; ok {
			return errcode.New(errcode.ForbiddenHeader, "header %q is refused: keys come from trust configuration", h)
		}
	}
	if f := keys.FamilyOf(t.Alg); f == keys.FamilyNone || keys.IsForbiddenAlg(t.Alg) || f.IsRSA() && !opts.RSA {
		return errcode.New(errcode.UnsupportedAlg, "alg %q is not accepted", errcode.Cut(t.Alg))
	}
	if len(opts.Algs) > 0 {
		ok := false
		for _, a := range opts.Algs {
			// The same family of package keys is the same algorithm (t.Alg's family
			// is known here: FamilyNone was refused above).
			if a == t.Alg || keys.FamilyOf(a) == keys.FamilyOf(t.Alg) {
				ok = true
				break
			}
		}
		if !ok {
			return errcode.New(errcode.UnsupportedAlg, "alg %q is not allowed here", errcode.Cut(t.Alg))
		}
	}
	return nil
}

// VerifyWith checks the signature with key, whose one algorithm must be the token's:
// the same family of package keys, so that for an Ed25519 key "EdDSA" (RFC 8037) and
// "Ed25519" (the fully-specified name of RFC 9864 section 2) are one algorithm, while
// any other name ("Ed448", "ES256" on an Ed25519 key, "Ed25519" on a P-256 key) is
// refused. exactAlg asks for string equality with the key's alg as well (the WPT rule).
func (t *Token) VerifyWith(key *keys.PublicKey, exactAlg bool) error {
	if exactAlg && key.Alg() != t.Alg || keys.FamilyOf(t.Alg) != key.Family() {
		return errcode.New(errcode.UnsupportedAlg, "alg %q does not match the key's %q", errcode.Cut(t.Alg), key.Alg())
	}
	// A view, not a copy: Verify only reads the message (it is hashed), and the string
	// outlives the call.
	if !key.Verify(stringView(t.signingInput), t.signature) {
		return errcode.New(errcode.InvalidSignature, "signature does not verify")
	}
	return nil
}
