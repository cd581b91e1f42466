package httpsig

import (
	"context"
	"io"
	"net/http"
	"net/textproto"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dunglas/httpsfv"
)

// Defaults of a Verifier.
const (
	DefaultMaxBodySize            = 1 << 20
	DefaultMaxSignatureHeaderSize = 16 << 10
	DefaultMaxLifetime            = 5 * time.Minute
)

// ReplayKeyPrefix prefixes the nonce in replay-store keys.
const ReplayKeyPrefix = "httpsig:nonce:"

// Fields the profile requires to be covered when the message carries them
// (http-signature-07 section 3), and MCP 2026-07-28's Mcp-Method and Mcp-Name, which
// intermediaries and receivers decide by (hostproto.CheckMCPHeaders holds them to the
// body). Dialog-Context is checked separately, with its own code (dialog-binding
// section 7).
var (
	requestMustCover  = headerKeys("content-type", "content-digest", "authorization", "txn-token", "workload-identity-token", "dialog-provenance", "mcp-method", "mcp-name")
	responseMustCover = headerKeys("content-type", "content-digest", "workload-identity-token")
	dialogContext     = component{name: "dialog-context", key: headerDialogContext}
)

type fieldKey struct{ name, key string }

func headerKeys(names ...string) []fieldKey {
	ks := make([]fieldKey, len(names))
	for i, n := range names {
		ks[i] = fieldKey{n, textproto.CanonicalMIMEHeaderKey(n)}
	}
	return ks
}

// Result describes a verified WIMSE signature.
type Result struct {
	// WIT is the validated WIT whose cnf key made the signature: the sender.
	WIT   *wit.WIT
	Label string
	// Created and Expires are the signature's validity window.
	Created, Expires time.Time
	Nonce            string
	// Audience is wimse-aud (requests).
	Audience string
	// SignResponse is wimse-sign-response (requests): the client will reject an
	// unsigned response, so the server MUST sign it or fail (section 3.5).
	SignResponse bool
	// ReqNonce is wimse-req-nonce (responses).
	ReqNonce string
	// Covered lists the covered component identifiers in signature order.
	Covered []string
	// Base and Signature are the signature base the verifier rebuilt and the signature
	// it checked: together with the WIT, a self-contained record of this hop's proof
	// (the dialog package carries them to later hops as provenance, section 9).
	Base      []byte
	Signature []byte
}

// Covers reports whether the signature covers the component with identifier id, e.g.
// `"txn-token"` or `"@path";req`.
func (r *Result) Covers(id string) bool {
	for _, c := range r.Covered {
		if c == id {
			return true
		}
	}
	return false
}

// Verifier checks WIMSE HTTP signatures; see the package documentation for the order of
// the checks. It is safe for concurrent use.
type Verifier struct {
	wits        *wit.Validator
	audiences   map[string]struct{}
	replay      store.Replay
	reqExtra    []component
	resExtra    []component
	maxAge      time.Duration
	maxLifetime time.Duration
	now         func() time.Time
	skew        time.Duration
	skewSet     bool
	maxBody     int64
	maxSigHdr   int
	configErr   error
}

// VerifierOption configures a Verifier.
type VerifierOption interface{ applyVerifier(*Verifier) }

// verifierOption is an option of NewVerifier only (see signerOption).
type verifierOption func(*Verifier)

func (o verifierOption) applyVerifier(v *Verifier) { o(v) }

// WithAudiences sets the wimse-aud values this recipient accepts, compared exactly.
// They must come from trusted configuration, never from Host or X-Forwarded-Host
// (SIG-7). Without any, every request is refused (audience_mismatch).
func WithAudiences(aud ...string) VerifierOption {
	return verifierOption(func(v *Verifier) {
		for _, a := range aud {
			if a != "" {
				v.audiences[a] = struct{}{}
			}
		}
	})
}

// WithReplay makes the verifier claim each verified nonce once in r (SIG-8), under
// ReplayKeyPrefix+nonce until the signature expires (plus skew). A replay is rejected
// with the store's Replayed error; a store failure with its Incomplete error.
func WithReplay(r store.Replay) VerifierOption {
	return verifierOption(func(v *Verifier) { v.replay = r })
}

// WithRequiredComponents sets components a request signature must cover beyond the
// profile's "@method" "@path" "@query", which are always required; identifiers are
// given as serialized, e.g. `"txn-token"`. It replaces the set of an earlier call. An
// invalid identifier makes every verification fail with invalid_request.
func WithRequiredComponents(ids ...string) VerifierOption {
	return verifierOption(func(v *Verifier) {
		cs, err := parseComponentIDs(ids, false)
		if err != nil {
			v.configErr = err
			return
		}
		v.reqExtra = cs
	})
}

// WithRequiredResponseComponents is WithRequiredComponents for response signatures,
// beyond "@status" "@method";req "@path";req "@query";req.
func WithRequiredResponseComponents(ids ...string) VerifierOption {
	return verifierOption(func(v *Verifier) {
		cs, err := parseComponentIDs(ids, true)
		if err != nil {
			v.configErr = err
			return
		}
		v.resExtra = cs
	})
}

// WithMaxAge rejects signatures whose created is more than d ago (too_old), however far
// away their expires is. Zero (the default) leaves freshness to expires.
func WithMaxAge(d time.Duration) VerifierOption {
	return verifierOption(func(v *Verifier) { v.maxAge = d })
}

// WithMaxLifetime rejects signatures that are still valid for more than d (plus skew):
// lifetime_too_long (default DefaultMaxLifetime). It also bounds how long a replay
// claim is held.
func WithMaxLifetime(d time.Duration) VerifierOption {
	return verifierOption(func(v *Verifier) {
		if d > 0 {
			v.maxLifetime = d
		}
	})
}

// WithSkew sets the clock skew allowed around created and expires (default: the WIT
// validator's).
func WithSkew(d time.Duration) VerifierOption {
	return verifierOption(func(v *Verifier) { v.skew, v.skewSet = d, true })
}

// WithMaxBodySize bounds the content read to check Content-Digest (default
// DefaultMaxBodySize); a longer body is body_too_large.
func WithMaxBodySize(n int64) VerifierOption {
	return verifierOption(func(v *Verifier) {
		if n > 0 {
			v.maxBody = n
		}
	})
}

// WithMaxSignatureHeaderSize bounds each of Signature-Input and Signature (default
// DefaultMaxSignatureHeaderSize); a longer one is parse_error.
func WithMaxSignatureHeaderSize(n int) VerifierOption {
	return verifierOption(func(v *Verifier) {
		if n > 0 {
			v.maxSigHdr = n
		}
	})
}

// NewVerifier returns a Verifier that validates senders' WITs with wits.
func NewVerifier(wits *wit.Validator, opts ...VerifierOption) *Verifier {
	v := &Verifier{
		wits:        wits,
		audiences:   map[string]struct{}{},
		maxLifetime: DefaultMaxLifetime,
		maxBody:     DefaultMaxBodySize,
		maxSigHdr:   DefaultMaxSignatureHeaderSize,
	}
	for _, o := range opts {
		o.applyVerifier(v)
	}
	if wits == nil {
		v.configErr = errcode.New(errcode.InvalidRequest, "verifier has no WIT validator")
		return v
	}
	if v.now == nil {
		v.now = wits.Now
	}
	if !v.skewSet {
		v.skew = wits.Skew()
	}
	return v
}

// VerifyRequest verifies the WIMSE signature of a received request and returns who made
// it. On success req.Body is the content that was checked against Content-Digest.
// Every rejection is an *errcode.Error.
func (v *Verifier) VerifyRequest(ctx context.Context, req *http.Request) (*Result, error) {
	return v.verifyRequest(ctx, req, "")
}

// PendingRequest is a request whose WIMSE signature verified over its fields (steps 1
// to 6 of the package documentation) and whose content is not read yet. Finish reads
// it, checks it against the authenticated Content-Digest and claims the nonce.
type PendingRequest struct {
	p   pending
	req *http.Request
}

// VerifyRequestFields runs every check that does not need the body: the signature over
// the fields, Content-Digest included, and the sender's WIT. req.Body is not touched, so
// a client that sent Expect: 100-continue has not been told to send it. The caller
// runs its own field checks (Txn-Token, Dialog-Context) and then Finish; the nonce is
// claimed only by Finish, so only an authenticated message, content and all, spends
// one. Every rejection is an *errcode.Error.
func (v *Verifier) VerifyRequestFields(ctx context.Context, req *http.Request) (*PendingRequest, error) {
	if v.configErr != nil {
		return nil, v.configErr
	}
	var m message
	if err := m.setRequest(req); err != nil {
		return nil, err
	}
	pr := &PendingRequest{req: req}
	if err := v.verifyFields(ctx, &pr.p, &m, "", ""); err != nil {
		if err == errUnsigned {
			return nil, errcode.New(errcode.MissingCredential, "the request carries no HTTP signature")
		}
		return nil, err
	}
	return pr, nil
}

// WIT is the sender's validated WIT, whose key made the signature.
func (pr *PendingRequest) WIT() *wit.WIT { return pr.p.res.WIT }

// Finish runs the rest of VerifyRequest on the request given to VerifyRequestFields:
// its body is read within the verifier's bound, compared with Content-Digest and put
// back (req.Body is then the content checked), and the nonce is claimed.
func (pr *PendingRequest) Finish(ctx context.Context) (*Result, error) {
	return pr.p.finish(ctx, &pr.req.Body, pr.req.ContentLength)
}

// VerifyRequestWithWIT is VerifyRequest with the sender's WIT given by the caller instead
// of read from the request's Workload-Identity-Token field. The WIT is validated exactly
// like one read from the message. It serves callers that received the peer's WIT out of
// band, and the conformance suite, whose vectors name the verifying identity apart from
// the message. A Workload-Identity-Token field in the request must still be covered.
func (v *Verifier) VerifyRequestWithWIT(ctx context.Context, req *http.Request, rawWIT string) (*Result, error) {
	if rawWIT == "" {
		return nil, errcode.New(errcode.InvalidRequest, "no WIT given")
	}
	return v.verifyRequest(ctx, req, rawWIT)
}

func (v *Verifier) verifyRequest(ctx context.Context, req *http.Request, rawWIT string) (*Result, error) {
	if v.configErr != nil {
		return nil, v.configErr
	}
	var m message
	if err := m.setRequest(req); err != nil {
		return nil, err
	}
	// VerifyRequestFields then Finish, in one call.
	res, err := v.verify(ctx, &m, rawWIT, "", &req.Body, req.ContentLength)
	if err == errUnsigned {
		return nil, errcode.New(errcode.MissingCredential, "the request carries no HTTP signature")
	}
	return res, err
}

// VerifyResponse verifies the response res to req, the request this client sent with
// nonce reqNonce (as returned by Signer.SignRequest). signedRequired is whether req
// asked for a signed response (wimse-sign-response).
//
// A response without any signature is refused with missing_credential when
// signedRequired, and accepted otherwise with a nil Result and a nil error: signing by
// server policy alone is opportunistic (section 3.5). A response that carries a
// signature is always verified and must pass. Its wimse-req-nonce must equal reqNonce.
// On success res.Body is the content that was checked against Content-Digest.
func (v *Verifier) VerifyResponse(ctx context.Context, res *http.Response, req *http.Request, reqNonce string, signedRequired bool) (*Result, error) {
	return v.verifyResponse(ctx, res, req, reqNonce, signedRequired, "")
}

// VerifyResponseWithWIT is VerifyResponse with the server's WIT given by the caller
// instead of read from the response; see VerifyRequestWithWIT.
func (v *Verifier) VerifyResponseWithWIT(ctx context.Context, res *http.Response, req *http.Request, reqNonce string, signedRequired bool, rawWIT string) (*Result, error) {
	if rawWIT == "" {
		return nil, errcode.New(errcode.InvalidRequest, "no WIT given")
	}
	return v.verifyResponse(ctx, res, req, reqNonce, signedRequired, rawWIT)
}

func (v *Verifier) verifyResponse(ctx context.Context, res *http.Response, req *http.Request, reqNonce string, signedRequired bool, rawWIT string) (*Result, error) {
	if v.configErr != nil {
		return nil, v.configErr
	}
	if res == nil || req == nil {
		return nil, errcode.New(errcode.InvalidRequest, "response and request are both required")
	}
	if reqNonce == "" {
		return nil, errcode.New(errcode.InvalidRequest, "the request's nonce is required to check wimse-req-nonce")
	}
	m, err := responseMessage(res.StatusCode, res.Header, req)
	if err != nil {
		return nil, err
	}
	r, err := v.verify(ctx, m, rawWIT, reqNonce, &res.Body, res.ContentLength)
	if err == errUnsigned {
		if signedRequired {
			return nil, errcode.New(errcode.MissingCredential, "the response is unsigned, but the request asked for a signed response (wimse-sign-response)")
		}
		return nil, nil
	}
	return r, err
}

// verify runs the checks in the order documented in doc.go. body points at the
// message's body, which is replaced by a reader over the octets checked.
func (v *Verifier) verify(ctx context.Context, m *message, rawWIT, reqNonce string, body *io.ReadCloser, contentLength int64) (*Result, error) {
	var p pending
	if err := v.verifyFields(ctx, &p, m, rawWIT, reqNonce); err != nil {
		return nil, err
	}
	return p.finish(ctx, body, contentLength)
}

// pending is a message whose fields passed steps 1 to 6, the signature included; its
// content is not read yet (steps 7 and 8 are finish).
type pending struct {
	v       *Verifier
	res     Result
	digest  receivedDigest
	now     time.Time
	expires time.Time
	// response: the message is a response (readBody classifies a broken body by it).
	response bool
}

// verifyFields runs steps 1 to 6 on m into *p: everything that does not need the body.
func (v *Verifier) verifyFields(ctx context.Context, p *pending, m *message, rawWIT, reqNonce string) error {
	// 1. SIG-1: find the one WIMSE signature.
	rcv, err := selectSignature(m.header, v.maxSigHdr)
	if err != nil {
		return err
	}

	// 2. SIG-3, parameters. Cheap and local, so before anything costs a signature check.
	sp, err := checkParams(rcv.input.Params, m.response)
	if err != nil {
		return err
	}
	if m.response {
		if !sp.hasReqNonce || sp.reqNonce != reqNonce {
			return errcode.New(errcode.RequestNonceMismatch, "wimse-req-nonce is not this client's request nonce")
		}
	} else if _, ok := v.audiences[sp.audience]; !ok {
		return errcode.New(errcode.AudienceMismatch, "wimse-aud %q is not an accepted audience", errcode.Cut(sp.audience))
	}

	// 3. SIG-3, covered components, parsed into an array on the stack (a WIMSE request
	// covers at most 10 components; a longer list is parsed into the heap).
	var compBuf [16]component
	comps, err := appendCovered(compBuf[:0], rcv.input.Items, m.response)
	if err != nil {
		return err
	}
	if err := v.checkCoverage(m, comps); err != nil {
		return err
	}

	// 4. SIG-6, the validity window, before the WIT: a signature from the future is
	// created_in_future even when the WIT it names was issued after the verifier's now.
	now := v.now()
	created, expires := time.Unix(sp.created, 0), time.Unix(sp.expires, 0)
	switch {
	case sp.expires < sp.created:
		return errcode.New(errcode.InvalidTimeWindow, "expires %d is before created %d", sp.expires, sp.created)
	case created.After(now.Add(v.skew)):
		return errcode.New(errcode.CreatedInFuture, "created %d is after now %d", sp.created, now.Unix())
	case now.After(expires.Add(v.skew)):
		return errcode.New(errcode.Expired, "signature expired at %d, now %d", sp.expires, now.Unix())
	case v.maxAge > 0 && now.Sub(created) > v.maxAge:
		return errcode.New(errcode.TooOld, "created %s ago, limit %s", now.Sub(created).Truncate(time.Second), v.maxAge)
	case expires.Sub(now) > v.maxLifetime+v.skew:
		return errcode.New(errcode.LifetimeTooLong, "signature is valid for another %s, limit %s", expires.Sub(now).Truncate(time.Second), v.maxLifetime)
	}

	// 5. SIG-2: the WIT, validated before the signature is verified.
	if rawWIT == "" {
		vals := m.header.Values(headerWIT)
		switch {
		case len(vals) == 0:
			return errcode.New(errcode.MissingCredential, "no Workload-Identity-Token")
		case len(vals) > 1:
			return errcode.New(errcode.DuplicateField, "%d Workload-Identity-Token fields, want one", len(vals))
		}
		rawWIT = vals[0]
	}
	w, err := v.wits.Validate(ctx, rawWIT)
	if err != nil {
		return err
	}

	// The Content-Digest field (bound, syntax) is checked with the other fields; the
	// body it names is compared after the signature (step 7).
	digest, err := parseContentDigest(m.header)
	if err != nil {
		return err
	}

	// 6. SIG-5: rebuild the base over the received parameters and verify with cnf.jwk.
	// The signature covers Content-Digest, not the content, so it is verified before
	// the body is read: nobody without the key makes a receiver read a body.
	sigParams, err := httpsfv.Marshal(rcv.input)
	if err != nil {
		return errcode.Wrap(errcode.ParseError, err, "Signature-Input member cannot be serialized")
	}
	base, err := signatureBase(m, comps, sigParams)
	if err != nil {
		return err
	}
	if !w.Key.Verify(base, rcv.sig) {
		return errcode.New(errcode.InvalidSignature, "signature does not verify with the key of WIT %s", tokenhash.Of(rawWIT))
	}

	covered := make([]string, len(comps))
	for i, c := range comps {
		covered[i] = c.id()
	}
	*p = pending{
		v: v, digest: digest, now: now, expires: expires, response: m.response,
		res: Result{
			WIT: w, Label: rcv.label, Created: created, Expires: expires,
			Nonce: sp.nonce, Audience: sp.audience, SignResponse: sp.signResponse,
			ReqNonce: sp.reqNonce, Covered: covered, Base: base, Signature: rcv.sig,
		},
	}
	return nil
}

// finish runs steps 7 and 8 on a message whose fields verified.
func (p *pending) finish(ctx context.Context, body *io.ReadCloser, contentLength int64) (*Result, error) {
	// 7. SIG-4: the content, bounded, against the Content-Digest just authenticated.
	// The body is put back for the handler whatever the outcome.
	if err := checkContent(p.digest, body, contentLength, p.v.maxBody, p.response); err != nil {
		return nil, err
	}

	// 8. SIG-8: claim the nonce last, so that only authenticated messages spend one.
	if v := p.v; v.replay != nil {
		ttl := p.expires.Add(v.skew).Sub(p.now)
		if ttl < time.Second {
			ttl = time.Second
		}
		if err := v.replay.Claim(ctx, ReplayKeyPrefix+p.res.Nonce, ttl); err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "replay store")
			}
			return nil, err
		}
	}
	res := p.res
	return &res, nil
}

// checkCoverage: the profile's fixed components and the configured ones are covered,
// and so is every field the profile requires to be covered when present.
func (v *Verifier) checkCoverage(m *message, comps []component) error {
	fixed, extra, must := requestFixed, v.reqExtra, requestMustCover
	if m.response {
		fixed, extra, must = responseFixed, v.resExtra, responseMustCover
	}
	for _, set := range [][]component{fixed, extra} {
		for _, want := range set {
			if !covers(comps, want) {
				return errcode.New(errcode.MissingRequiredComponent, "the signature does not cover %s", want.id())
			}
		}
	}
	// covers (a scan of a few names) before present (a header map lookup): a field that
	// is covered needs no lookup.
	for _, f := range must {
		if !covers(comps, component{name: f.name, key: f.key}) && m.present(f.key) {
			return errcode.New(errcode.MissingRequiredComponent, "the message carries %s, which the signature does not cover", f.key)
		}
	}
	if !covers(comps, dialogContext) && m.present(dialogContext.key) {
		return errcode.New(errcode.DialogContextNotCovered, "the message carries Dialog-Context, which the signature does not cover")
	}
	return nil
}

func covers(comps []component, want component) bool {
	for _, c := range comps {
		if c.name == want.name && c.req == want.req {
			return true
		}
	}
	return false
}
