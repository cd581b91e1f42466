package httpsig

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/textproto"
	"sort"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dunglas/httpsfv"
)

// Tag is the tag of every WIMSE signature (http-signature-07 section 3). Verifiers find
// the WIMSE signature by it, never by its label.
const Tag = "wimse-workload-to-workload"

// DefaultLabel is the label this package signs with. Any label works: verifiers select
// by Tag.
const DefaultLabel = "wimse"

// DefaultTTL is expires - created of a signature made by a Signer.
const DefaultTTL = 60 * time.Second

// Components covered when the message carries them (http-signature-07 section 3;
// dialog-context: dialog-binding section 7; mcp-method and mcp-name: MCP 2026-07-28's
// fields that repeat the body's method and tool for intermediaries, which decide by
// them, so a signature that leaves them out would let a hop change what they decide
// on), in the order they are listed in Signature-Input.
var (
	requestOptionalFields  = []string{"content-type", "content-digest", "authorization", "txn-token", "workload-identity-token", "dialog-context", "dialog-provenance", "mcp-method", "mcp-name"}
	responseOptionalFields = []string{"content-type", "content-digest", "workload-identity-token", "dialog-context"}

	requestFixed  = mustComponents(false, `"@method"`, `"@path"`, `"@query"`)
	responseFixed = mustComponents(true, `"@status"`, `"@method";req`, `"@path";req`, `"@query";req`)

	// The optional fields as components, header keys computed once.
	requestOptional  = fieldComponents(requestOptionalFields)
	responseOptional = fieldComponents(responseOptionalFields)
)

func fieldComponents(names []string) []component {
	cs := make([]component, len(names))
	for i, n := range names {
		cs[i] = component{name: n, key: textproto.CanonicalMIMEHeaderKey(n)}
	}
	return cs
}

func mustComponents(response bool, ids ...string) []component {
	cs, err := parseComponentIDs(ids, response)
	if err != nil {
		panic(err)
	}
	return cs
}

// Signer makes WIMSE HTTP signatures with a workload's WIT key. It is safe for
// concurrent use: every signature gets its own created, expires and nonce.
type Signer struct {
	key   *keys.PrivateKey
	wit   string
	label string
	ttl   time.Duration
	now   func() time.Time
	nonce func() string
}

// SignerOption configures a Signer.
type SignerOption interface{ applySigner(*Signer) }

// signerOption is an option of NewSigner only: passing it to NewVerifier is a compile
// error instead of an option quietly ignored.
type signerOption func(*Signer)

func (o signerOption) applySigner(s *Signer) { o(s) }

// ClockOption is the clock WithClock sets; it serves NewSigner (created) and
// NewVerifier, so that a test hands the same clock to both.
type ClockOption func() time.Time

func (now ClockOption) applySigner(s *Signer)     { s.now = now }
func (now ClockOption) applyVerifier(v *Verifier) { v.now = now }

// WithClock sets the clock of NewSigner or NewVerifier (default time.Now for signing,
// the WIT validator's for verifying). Time is an input: tests move it instead of
// sleeping. A nil clock keeps the default.
func WithClock(now func() time.Time) ClockOption { return ClockOption(now) }

var (
	_ SignerOption   = ClockOption(nil)
	_ VerifierOption = ClockOption(nil)
)

// WithLabel sets the Signature-Input label (default DefaultLabel). It must be an RFC 8941
// key (lowercase letter or '*', then lowercase letters, digits, '_', '-', '.', '*').
func WithLabel(label string) SignerOption { return signerOption(func(s *Signer) { s.label = label }) }

// WithTTL sets expires - created (default DefaultTTL). The profile wants it short
// (minutes at most); a verifier refuses signatures that live longer than its maximum.
func WithTTL(d time.Duration) SignerOption { return signerOption(func(s *Signer) { s.ttl = d }) }

// WithNonceSource replaces the nonce generator (default: 128 random bits, base64url).
// Every call must return a new, non-empty value of printable ASCII, and f must be safe
// for concurrent use; tests use it for reproducible signatures.
func WithNonceSource(f func() string) SignerOption {
	return signerOption(func(s *Signer) { s.nonce = f })
}

// NewSigner returns a Signer for the workload whose WIT (compact JWT) binds key.
func NewSigner(key *keys.PrivateKey, wit string, opts ...SignerOption) *Signer {
	s := &Signer{key: key, wit: wit, label: DefaultLabel, ttl: DefaultTTL, now: time.Now, nonce: randomNonce}
	for _, o := range opts {
		o.applySigner(s)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// randomNonce returns 128 random bits: collisions stay negligible across everything a
// recipient sees within a signature lifetime, without coordination (section 3).
func randomNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// RequestOption configures one SignRequest call.
type RequestOption func(*requestOptions)

type requestOptions struct{ signResponse bool }

// RequestSignResponse sets wimse-sign-response: the caller will reject an unsigned
// response (http-signature-07 section 3.3). A client configured to require signed
// responses MUST send it.
func RequestSignResponse(b bool) RequestOption {
	return func(o *requestOptions) { o.signResponse = b }
}

// SignRequest signs req for the recipient named by audience (wimse-aud: by default the
// target URI without query and fragment as the sender knows it, else a value agreed
// with the recipient). It returns the nonce, which the caller keeps to check the
// response's wimse-req-nonce.
//
// It sets Workload-Identity-Token (exactly one), Content-Digest (sha-256) when req has
// content, and Signature-Input and Signature, replacing any that were there: a message
// carries one WIMSE signature, and a forwarded request's earlier one would make it
// ambiguous. The body is read and put back (through req.GetBody when set, so that a
// retry can replay it). Covered: "@method" "@path" "@query", then whichever of
// content-type, content-digest, authorization, txn-token, workload-identity-token,
// dialog-context, dialog-provenance, mcp-method and mcp-name req carries.
func (s *Signer) SignRequest(req *http.Request, audience string, opts ...RequestOption) (string, error) {
	var o requestOptions
	for _, f := range opts {
		f(&o)
	}
	if req == nil || req.URL == nil {
		return "", errcode.New(errcode.InvalidRequest, "request has no URL")
	}
	if audience == "" {
		return "", errcode.New(errcode.InvalidRequest, "wimse-aud must name the recipient")
	}
	if err := s.check(); err != nil {
		return "", err
	}
	body, err := requestBody(req)
	if err != nil {
		return "", err
	}
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	h := req.Header
	foldHeaderKeys(h)
	h.Set(headerWIT, s.wit)
	if len(body) > 0 {
		d, err := contentDigest(body)
		if err != nil {
			return "", err
		}
		h.Set(headerContentDigest, d)
	}
	h.Del(headerSignatureInput)
	h.Del(headerSignature)

	m, err := requestMessage(req)
	if err != nil {
		return "", err
	}
	comps := coveredForSigning(requestFixed, requestOptional, m)
	p, err := s.params()
	if err != nil {
		return "", err
	}
	p.Audience = audience
	p.SignResponse = o.signResponse
	si, sig, err := sign(s.key, s.label, comps, p, m)
	if err != nil {
		return "", err
	}
	h.Set(headerSignatureInput, si)
	h.Set(headerSignature, sig)
	return p.Nonce, nil
}

// SignResponse signs a response a server is about to send: status, header h and body,
// answering req (the request as the server received it) whose nonce was reqNonce (from
// Result.Nonce). It sets the server's own Workload-Identity-Token, Content-Digest when
// body is not empty, and Signature-Input/Signature (replacing any). Covered: "@status"
// "@method";req "@path";req "@query";req, then whichever of content-type,
// content-digest, workload-identity-token and dialog-context h carries. Parameters:
// created, expires, nonce, tag and wimse-req-nonce; never wimse-aud.
//
// body must be exactly the octets that will be written. Without a Content-Type in h, the
// type net/http would sniff from body is set (and so covered).
func (s *Signer) SignResponse(status int, h http.Header, body []byte, req *http.Request, reqNonce string) error {
	if h == nil {
		return errcode.New(errcode.InvalidRequest, "nil response header")
	}
	if reqNonce == "" {
		return errcode.New(errcode.InvalidRequest, "the request nonce is required (wimse-req-nonce)")
	}
	if req == nil {
		return errcode.New(errcode.InvalidRequest, "the request being answered is required")
	}
	if err := s.check(); err != nil {
		return err
	}
	foldHeaderKeys(h)
	h.Set(headerWIT, s.wit)
	if len(body) > 0 {
		d, err := contentDigest(body)
		if err != nil {
			return err
		}
		h.Set(headerContentDigest, d)
		if _, ok := h["Content-Type"]; !ok {
			// net/http would add a sniffed Content-Type after the signature is made, and
			// the client would then refuse a present but uncovered content-type. Set the
			// same value now, so that it is covered.
			h.Set("Content-Type", http.DetectContentType(body))
		}
	}
	h.Del(headerSignatureInput)
	h.Del(headerSignature)
	m, err := responseMessage(status, h, req)
	if err != nil {
		return err
	}
	comps := coveredForSigning(responseFixed, responseOptional, m)
	p, err := s.params()
	if err != nil {
		return err
	}
	p.ReqNonce = reqNonce
	si, sig, err := sign(s.key, s.label, comps, p, m)
	if err != nil {
		return err
	}
	h.Set(headerSignatureInput, si)
	h.Set(headerSignature, sig)
	return nil
}

func (s *Signer) check() error {
	if s.key == nil {
		return errcode.New(errcode.InvalidRequest, "signer has no key")
	}
	if s.wit == "" || containsAnyByte(s.wit, "\r\n\x00, ") {
		return errcode.New(errcode.InvalidRequest, "signer has no usable WIT")
	}
	if !validLabel(s.label) {
		return errcode.New(errcode.InvalidRequest, "label %q is not an RFC 8941 key", errcode.Cut(s.label))
	}
	if s.ttl < time.Second {
		return errcode.New(errcode.InvalidRequest, "signature TTL %v is under one second", s.ttl)
	}
	return nil
}

// containsAnyByte is strings.ContainsAny for a few ASCII bytes, one vectorized
// IndexByte scan per byte instead of IndexAny's byte-at-a-time loop: the WIT checked on
// every signature is over half a kilobyte.
func containsAnyByte(s, chars string) bool {
	for i := 0; i < len(chars); i++ {
		if strings.IndexByte(s, chars[i]) >= 0 {
			return true
		}
	}
	return false
}

func (s *Signer) params() (Params, error) {
	created := s.now().Unix()
	nonce := s.nonce()
	if nonce == "" || len(nonce) > maxNonceLen {
		return Params{}, errcode.New(errcode.InvalidRequest, "the nonce source returned an unusable nonce")
	}
	return Params{
		Created: created,
		Expires: created + int64(s.ttl/time.Second),
		Nonce:   nonce,
		Tag:     Tag,
	}, nil
}

// coveredForSigning is the fixed components plus the optional fields m carries.
func coveredForSigning(fixed, optional []component, m *message) []component {
	comps := append(make([]component, 0, len(fixed)+len(optional)), fixed...)
	for _, c := range optional {
		if m.present(c.key) {
			comps = append(comps, c)
		}
	}
	return comps
}

// sign builds the base for comps and p over m, signs it with key and returns the
// Signature-Input and Signature field values for label.
//
// The member label=(...) is serialized once, and "@signature-params" is taken from it:
// RFC 8941 serializes a dictionary member with an inner-list value as the key, "=" and
// the inner list's serialization, which is the parameters line. If that serialization
// fails (a parameter or the label cannot be serialized), signSeparately redoes the work
// step by step, so that errors come out exactly as they always did.
func sign(key *keys.PrivateKey, label string, comps []component, p Params, m *message) (string, string, error) {
	if key == nil {
		return "", "", errcode.New(errcode.InvalidRequest, "no signing key")
	}
	d := httpsfv.NewDictionary()
	d.Add(label, p.list(comps))
	si, err := httpsfv.Marshal(d)
	if err != nil || len(si) <= len(label) || si[:len(label)] != label || si[len(label)] != '=' {
		return signSeparately(key, label, comps, p, m)
	}
	base, err := signatureBase(m, comps, si[len(label)+1:])
	if err != nil {
		return "", "", err
	}
	sig, err := key.Sign(base)
	if err != nil {
		return "", "", err
	}
	s, err := signatureField(label, sig)
	if err != nil {
		return "", "", err
	}
	return si, s, nil
}

// signSeparately is sign serializing the inner list and the fields on their own.
func signSeparately(key *keys.PrivateKey, label string, comps []component, p Params, m *message) (string, string, error) {
	il, sp, err := p.innerList(comps)
	if err != nil {
		return "", "", err
	}
	base, err := signatureBase(m, comps, sp)
	if err != nil {
		return "", "", err
	}
	sig, err := key.Sign(base)
	if err != nil {
		return "", "", err
	}
	return signatureFields(label, il, sig)
}

// SignRequestWithParams is the low-level signer under Signer.SignRequest: it signs req
// as it is (no header is added or changed) over exactly components (identifiers as
// serialized in Signature-Input, e.g. `"@method"`) with exactly p, and returns the
// Signature-Input and Signature field values for label. It does not enforce the
// profile; it exists to reproduce recorded signatures (the conformance vectors) and to
// build test messages. Applications use Signer.
func SignRequestWithParams(key *keys.PrivateKey, label string, components []string, p Params, req *http.Request) (signatureInput, signature string, err error) {
	comps, err := parseComponentIDs(components, false)
	if err != nil {
		return "", "", err
	}
	m, err := requestMessage(req)
	if err != nil {
		return "", "", err
	}
	return sign(key, label, comps, p, m)
}

// SignResponseWithParams is SignRequestWithParams for a response with status and
// header h, answering req (the source of ;req components).
func SignResponseWithParams(key *keys.PrivateKey, label string, components []string, p Params, status int, h http.Header, req *http.Request) (signatureInput, signature string, err error) {
	comps, err := parseComponentIDs(components, true)
	if err != nil {
		return "", "", err
	}
	m, err := responseMessage(status, h, req)
	if err != nil {
		return "", "", err
	}
	return sign(key, label, comps, p, m)
}

// requestBody reads req's content and leaves req able to send it again. With GetBody
// (set by http.NewRequest for in-memory bodies) the body itself is left untouched.
func requestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "request body")
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "request body")
		}
		return b, nil
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "request body")
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	req.ContentLength = int64(len(b))
	return b, nil
}

// foldHeaderKeys moves values stored under non-canonical keys (set by writing the map
// directly) to the canonical key, so that the signer sees every field and net/http
// sends them in the order that was signed. Non-canonical spellings are folded in sorted
// order, after the canonical key's own values.
func foldHeaderKeys(h http.Header) {
	var odd []string
	for k := range h {
		if textproto.CanonicalMIMEHeaderKey(k) != k {
			odd = append(odd, k)
		}
	}
	if len(odd) == 0 {
		return
	}
	sort.Strings(odd)
	for _, k := range odd {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		h[ck] = append(h[ck], h[k]...)
		delete(h, k)
	}
}
