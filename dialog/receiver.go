package dialog

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// TxnTokenVerifier validates a Txn-Token (txntoken.Verifier implements it).
type TxnTokenVerifier interface {
	Verify(ctx context.Context, raw string) (*txntoken.Claims, error)
}

// Verified is what the receiver learned about a request, from three independent
// sources that it checked agree (section 1): who sent it, what it may do, which dialog.
type Verified struct {
	// Sender is the workload whose proof verified (the WIT sub).
	Sender identifier.ID
	// SenderWIT is the sender's validated WIT.
	SenderWIT *wit.WIT
	// Proof is how the sender proved possession of its WIT key: proof.HTTPSig or
	// proof.WPT (String gives "httpsig" or "wpt").
	Proof proof.Method
	// Signature is the verified HTTP signature (nil with a WPT).
	Signature *httpsig.Result
	// Context is the verified Dialog-Context (nil when the request carried none).
	Context *Context
	// Outcome says whether this request established the dialog (stateful receivers).
	Outcome Outcome
	// InitiatorVerified: the initiator was proved, by the sender being the initiator or
	// by a provenance chain whose origin is the initiator (section 12 step 2).
	InitiatorVerified bool
	// Chain is the verified provenance (nil without one).
	Chain *Chain
	// Provenance is the provenance as received (nil without one); Forward appends the
	// sender's record to it for the next hop.
	Provenance *Provenance
	// TxnToken is the raw Txn-Token and Txn its validated claims (nil without one).
	TxnToken string
	Txn      *txntoken.Claims
	// Handoff is the handoff receiver's decision on a handoff that travelled with the
	// request (nil without one, or without WithHandoffs). Only an accepted offer reaches
	// the handler. A rejected offer and a retransmission never do: the Middleware
	// answers them itself, with the signed status the handoff receiver gives (the
	// "rejected" status of section 5.1, the last status resent to a retransmission from
	// the authenticated offer.iss, sections 5.3 and 8.4) in the host protocol's reply
	// (section 6), or with the refusal alone when there is no status to send (a JSON-RPC
	// error for a JSON-RPC request, else the problem document).
	Handoff *handoff.Decision
	// Cancel is what the handoff receiver found in a delegator's "canceled" status
	// that travelled with the request (MCP notifications/cancelled, an A2A cancel;
	// WithHandoffsIn): checked and recorded, its StopWork saying whether work that was
	// taken is to stop. nil without one.
	Cancel *handoff.CancelResult

	// audit holds what WithAuditor's record names beyond the members above.
	audit auditFacts
}

// Forward returns the provenance a forwarder sends with its next request in the same
// dialog: the records received plus the sender's own (section 9). It needs an HTTP
// signature (a WPT carries no signature base).
func (v *Verified) Forward() (*Provenance, error) {
	if v.Signature == nil {
		return nil, errcode.New(errcode.InvalidProvenance, "the request was proved with a WPT: there is no signature to record")
	}
	r, err := RecordOf(v.Signature)
	if err != nil {
		return nil, err
	}
	return Append(v.Provenance, r)
}

type verifiedKey struct{}

// FromRequest returns what the Receiver verified, or nil outside a Receiver.
func FromRequest(r *http.Request) *Verified {
	v, _ := r.Context().Value(verifiedKey{}).(*Verified)
	return v
}

// Receiver verifies requests as section 12 says and hands the handler one verified
// context. Build it with NewReceiver; use Middleware with net/http or chi.
type Receiver struct {
	sig            *httpsig.Verifier
	wpt            *wpt.Verifier
	txn            TxnTokenVerifier
	prov           *ProvenanceVerifier
	registry       *Registry
	requireTxn     bool
	requireDialog  bool
	requireOrigin  bool
	sigForBody     bool
	responseSigner func(ctx context.Context) (*httpsig.Signer, error)
	streamUnsigned bool
	handoffs       *handoff.Receiver
	place          func(body []byte) (*hostproto.Carried, error)
	authorizer     authz.Decider
	revocations    *revoke.Checker
	// auditor, auditSelf and auditHandler are WithAuditor's and WithAuditHandler's
	// (audit.go).
	auditor      audit.Appender
	auditSelf    string
	auditHandler string
	// metadata is WithResourceMetadata's; published it checked and encoded, and
	// challenge the WWW-Authenticate of 401s (resourcemetadata.go).
	metadata  *ResourceMetadata
	published *publishedMetadata
	challenge string
}

// ReceiverOption configures a Receiver.
type ReceiverOption func(*Receiver)

// WithHTTPSignatures accepts WIMSE HTTP signatures verified by v (with its replay store).
func WithHTTPSignatures(v *httpsig.Verifier) ReceiverOption { return func(r *Receiver) { r.sig = v } }

// WithWPT accepts Workload Proof Tokens verified by v (with its replay store).
func WithWPT(v *wpt.Verifier) ReceiverOption { return func(r *Receiver) { r.wpt = v } }

// WithTxnTokens validates Txn-Tokens with v. Without it a request carrying a Txn-Token
// is refused as could not be completed: the receiver could not check it (section 12
// step 3).
func WithTxnTokens(v TxnTokenVerifier) ReceiverOption { return func(r *Receiver) { r.txn = v } }

// WithProvenance verifies earlier hops' records with v (section 9). Without it a request
// carrying provenance is refused (could not be completed) rather than half-checked.
func WithProvenance(v *ProvenanceVerifier) ReceiverOption { return func(r *Receiver) { r.prov = v } }

// WithRegistry makes the receiver a stateful participant that creates and tracks
// dialogs (section 5). Without it the receiver is stateless, like a tool.
func WithRegistry(reg *Registry) ReceiverOption { return func(r *Receiver) { r.registry = reg } }

// RequireTxnToken refuses requests without a Txn-Token.
func RequireTxnToken() ReceiverOption { return func(r *Receiver) { r.requireTxn = true } }

// RequireDialog refuses requests without a Dialog-Context.
func RequireDialog() ReceiverOption { return func(r *Receiver) { r.requireDialog = true } }

// RequireSignatureForBody refuses a request proved with a WPT that has a body (a
// Content-Length other than 0, or a chunked body), with missing_credential, before
// the body is read: its body is then always covered by an HTTP signature's
// Content-Digest. A WPT binds the body only when its sender chose to bind the request
// (wpt.RequestOptions.BindRequest), which the receiver cannot require of a peer: with
// this option a body is never taken on a WPT's word. Requests without a body may still
// come with a WPT.
func RequireSignatureForBody() ReceiverOption { return func(r *Receiver) { r.sigForBody = true } }

// RequireVerifiedInitiator refuses a request whose initiator is not proved: the sender
// is not the initiator and no provenance chain leads back to it.
func RequireVerifiedInitiator() ReceiverOption { return func(r *Receiver) { r.requireOrigin = true } }

// WithResponseSigner signs responses to HTTP-signed requests with the server's own WIT
// and key (section 7: the signature covers Dialog-Context). signer is asked per request
// so that a refreshed WIT is used.
func WithResponseSigner(signer func(ctx context.Context) (*httpsig.Signer, error)) ReceiverOption {
	return func(r *Receiver) { r.responseSigner = signer }
}

// WithStreamingUnsigned lets an event stream (Content-Type text/event-stream: MCP
// Streamable HTTP's replies and GET stream, A2A's streaming methods) go out unsigned as
// the handler writes it, each flush reaching the client, when the request did not ask
// for a signed response (no wimse-sign-response). http-signature-07 section 3.5 allows
// it: signing is RECOMMENDED, and a client that did not ask MUST accept an unsigned
// response. Everything else is signed as without the option: every response that is
// not an event stream, and every response to a request that asked, which is held
// within MaxSignedResponseBody and signed, or refused (response_not_signable) and
// never sent unsigned. A flush alone does not make a response a stream: handlers and
// proxies flush ordinary replies too, and a flush that dropped the signature would
// strip it from them. Without a response signer the option changes nothing.
//
// It is an option, off by default, because a receiver given a response signer has
// been told to sign: without it the receiver acts as the draft's "server policy
// requires" signing, and an operator who turned signing on does not see a stream lose
// its signature because a release changed a default. That policy holds every stream,
// so a stream reaches the client only when it ends, and one that grows past the bound
// is refused with response_not_signable (501) in place of an unsigned success.
func WithStreamingUnsigned() ReceiverOption {
	return func(r *Receiver) { r.streamUnsigned = true }
}

// NewReceiver builds a Receiver; at least one proof method is required.
func NewReceiver(opts ...ReceiverOption) (*Receiver, error) {
	r := &Receiver{}
	for _, o := range opts {
		o(r)
	}
	if r.sig == nil && r.wpt == nil {
		return nil, errcode.New(errcode.InvalidRequest, "a receiver needs HTTP signatures or WPTs")
	}
	if err := r.publishMetadata(); err != nil {
		return nil, err
	}
	return r, nil
}

// Verify runs section 12 on r and returns what it verified. Every rejection is an
// *errcode.Error whose kind says whether a check failed or could not be completed.
func (rc *Receiver) Verify(ctx context.Context, r *http.Request) (*Verified, error) {
	v, _, err := rc.verify(ctx, r, &Verified{})
	return v, err
}

// verify is Verify that also returns, with a refused handoff, the signed status to
// answer it with and what was verified before it (the proof and the Dialog-Context,
// with which the answer is signed and echoed); with a refusal at the handoff step that
// has no status, the statusless reply naming the JSON-RPC request (nil otherwise).
// into receives what was verified, refused or not (the audit record's facts).
func (rc *Receiver) verify(ctx context.Context, r *http.Request, into *Verified) (*Verified, *handoffReply, error) {
	v, reply, err := rc.verifyRequest(ctx, r, into)
	if err != nil {
		if reply != nil && reply.status != nil {
			return v, reply, err
		}
		return nil, reply, err
	}
	return v, nil, nil
}

// verifyRequest runs section 12 in the order of the receiver's documentation (doc.go):
// every check of the fields first (the proof, Dialog-Context, provenance, the dialog's
// state, the Txn-Token), then the body (its Content-Digest, and the nonce or jti claimed
// last of the proof), then what is read from the body (a handoff), and the side
// effect (the dialog established) last. The body is not read before every field check
// passed: a request any of them refuses never gets a 100 Continue, and no octet of its
// body is read.
func (rc *Receiver) verifyRequest(ctx context.Context, r *http.Request, v *Verified) (*Verified, *handoffReply, error) {
	// Step 1: the sending hop's WIT and proof, which must cover Dialog-Context (and
	// Txn-Token and the provenance field): httpsig and wpt enforce the coverage. The
	// proof is checked over the fields here; its body check and its replay claim are
	// finish's, after the other field checks.
	var finish func(context.Context) error
	switch {
	case len(r.Header.Values("Signature-Input")) > 0 || len(r.Header.Values("Signature")) > 0:
		if rc.sig == nil {
			return nil, nil, errcode.New(errcode.MissingCredential, "HTTP signatures are not accepted here")
		}
		p, err := rc.sig.VerifyRequestFields(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		v.Sender, v.SenderWIT, v.Proof = p.WIT().Subject, p.WIT(), proof.HTTPSig
		finish = func(ctx context.Context) error {
			// Set only once the whole proof verified and its nonce is claimed: a refusal
			// after that is signed (Middleware), one before it never.
			res, err := p.Finish(ctx)
			if err != nil {
				return err
			}
			v.Signature = res
			return nil
		}
	case hasWPT(r.Header):
		if rc.wpt == nil {
			return nil, nil, errcode.New(errcode.MissingCredential, "WPTs are not accepted here")
		}
		if rc.sigForBody && hasBody(r) {
			return nil, nil, errcode.New(errcode.MissingCredential, "a request with a body needs an HTTP signature here: a WPT is accepted only without one")
		}
		// The provenance field is a context token for the WPT: bound through oth.
		p, err := rc.wpt.VerifyRequestFields(ctx, r, wpt.RequestOptions{ContextTokenFields: []string{ProvenanceHeader}})
		if err != nil {
			return nil, nil, err
		}
		res := p.Result()
		v.Sender, v.SenderWIT, v.Proof = res.WIT.Subject, res.WIT, proof.WPT
		finish = func(ctx context.Context) error {
			_, err := p.Finish(ctx)
			return err
		}
	default:
		return nil, nil, errcode.New(errcode.MissingCredential, "the request carries no WIMSE proof")
	}

	if rc.auditor != nil {
		// The proof covers the Txn-Token field: its hash names what this sender presented.
		v.audit.txnSHA256 = txnTokenSHA256(r.Header)
	}
	dc, err := FromHeader(r.Header)
	if err != nil {
		return nil, nil, err
	}
	v.Context = dc
	if dc == nil && rc.requireDialog {
		return nil, nil, errcode.New(errcode.InvalidDialogContext, "this endpoint requires a Dialog-Context")
	}
	var establishes Outcome // what the registry's check found: a new dialog, or one that exists
	provValues := r.Header.Values(ProvenanceHeader)
	if len(provValues) > 1 {
		return nil, nil, errcode.New(errcode.DuplicateField, "more than one %s field", ProvenanceHeader)
	}
	if dc != nil {
		v.InitiatorVerified = v.Sender.Equal(dc.Initiator())
		// Step 2: earlier hops' proofs, whose origin must be the initiator.
		if len(provValues) == 1 {
			if rc.prov == nil {
				// Section 12: the check could not be performed here, which is not a
				// failed check of the sender's provenance.
				return nil, nil, errcode.Unavailable(errcode.InvalidProvenance, nil, "no provenance verifier is configured, so the provenance cannot be checked")
			}
			p, err := ParseProvenance(provValues[0])
			if err != nil {
				return nil, nil, err
			}
			chain, err := rc.prov.Verify(ctx, p, dc)
			if err != nil {
				return nil, nil, err
			}
			v.Provenance, v.Chain, v.InitiatorVerified = p, chain, true
		}
		if rc.requireOrigin && !v.InitiatorVerified {
			return nil, nil, errcode.New(errcode.InitiatorMismatch, "the initiator %s is not proved: the sender is %s and no provenance leads back to the initiator", dc.Initiator(), v.Sender)
		}
		if rc.registry != nil {
			// Section 5 is checked here, but the dialog is established only once
			// every check has passed (below): a refused request takes no dialog.
			if establishes, err = rc.registry.Check(ctx, dc, v.Sender); err != nil {
				return nil, nil, err
			}
		}
	} else if len(provValues) == 1 {
		return nil, nil, errcode.New(errcode.InvalidProvenance, "provenance without a Dialog-Context")
	}

	// Step 3: the Txn-Token, recorded for this very dialog.
	txnValues := r.Header.Values(txntoken.HeaderName)
	switch {
	case len(txnValues) > 1:
		return nil, nil, errcode.New(errcode.DuplicateField, "more than one Txn-Token field")
	case len(txnValues) == 0 && rc.requireTxn:
		return nil, nil, errcode.New(errcode.MissingCredential, "this endpoint requires a Txn-Token")
	case len(txnValues) == 1:
		if rc.txn == nil {
			return nil, nil, errcode.Unavailable(errcode.UntrustedIssuer, nil, "no Txn-Token verifier is configured, so the Txn-Token cannot be checked")
		}
		raw := strings.TrimSpace(txnValues[0])
		claims, err := rc.txn.Verify(ctx, raw)
		if err != nil {
			return nil, nil, err
		}
		// Dialog-bound authorization (section 13): a token recorded for a dialog is used
		// only in that dialog, and never outside one.
		switch {
		case dc != nil:
			if err := txntoken.DialogMatches(claims, dc.DLG()); err != nil {
				return nil, nil, err
			}
		case claims.Dialog() != "":
			return nil, nil, errcode.New(errcode.DialogMismatch, "the Txn-Token records a dialog but the request carries no Dialog-Context")
		}
		v.TxnToken, v.Txn = raw, claims
	}
	// Every field checked: now the body, against the Content-Digest the proof covers
	// (or a WPT binds), and the proof's nonce or jti claimed.
	if err := finish(ctx); err != nil {
		return nil, nil, err
	}
	if rc.revocations != nil {
		// Verified: is it revoked (issue 26)? Before the body is read for anything.
		if err := rc.checkRevoked(ctx, v); err != nil {
			return nil, nil, err
		}
	}
	// The body, read once for the steps that read it (authorization, handoffs) and put
	// back for the handler.
	var body []byte
	if rc.handoffs != nil || rc.authorizer != nil || hostproto.MCPHeadersApply(r.Header) {
		var err error
		if body, err = readBody(r); err != nil {
			return nil, nil, err // a body that could not be read has no request to name
		}
		// MCP 2026-07-28: the fields intermediaries decide by (Mcp-Method, Mcp-Name,
		// the protocol version) say what the body says, before anything is decided or
		// recorded by the body.
		if err := hostproto.CheckMCPHeaders(r.Header, body); err != nil {
			return nil, jsonrpcRequestOf(body), err
		}
	}
	if rc.authorizer != nil {
		// Every check passed: is this sender allowed this operation? Before the handoff
		// step and the dialog's establishment, which record what a request brought.
		if err := rc.authorize(ctx, r, v, body); err != nil {
			return nil, jsonrpcRequestOf(body), err
		}
	}
	if rc.handoffs != nil {
		if reply, err := rc.receiveHandoff(r, v, body); err != nil {
			if establishes == Established {
				// The request would have established its dialog, which a refused
				// request does not take: a reply echoing its Dialog-Context would tell
				// the initiator otherwise (section 5). The refusal goes alone (a
				// JSON-RPC request's still as a JSON-RPC error).
				reply = reply.withoutStatus()
			}
			return v, reply, err
		}
	}
	if dc != nil && rc.registry != nil {
		// The side effect, last. Accept is atomic: of two requests proposing one new
		// dialog, the second is refused here even though both passed Check.
		out, err := rc.registry.Accept(ctx, dc, v.Sender)
		if err != nil {
			return nil, nil, err
		}
		v.Outcome = out
	}
	return v, nil, nil
}

// hasBody reports, from the fields alone, whether r has a body: a Content-Length other
// than 0, or a body of unknown length (chunked).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 || (r.Body != nil && r.Body != http.NoBody)
}

func hasWPT(h http.Header) bool {
	if len(h.Values(wpt.LegacyHeader)) > 0 {
		return true
	}
	for _, a := range h.Values("Authorization") {
		if scheme, _, ok := strings.Cut(strings.TrimSpace(a), " "); ok && strings.EqualFold(scheme, wpt.AuthScheme) {
			return true
		}
	}
	return false
}

// Middleware verifies every request before next sees it. A rejection is an RFC 9457
// problem document with the stable code; a check that could not be completed answers
// 503, a failed one 400/401/403 (section 12: the error says which happened). When the
// request was HTTP-signed and a response signer is configured, the response is signed
// (covering the Dialog-Context it echoes), but an event stream the client did not ask
// to have signed with WithStreamingUnsigned; when a signed response is required (the
// client demanded one, or the signer signs every response) and none can be made, no
// unsigned success is sent (http-signature-07 section 3.5): response_not_signable.
// A refusal after the request's HTTP signature verified (its body and nonce too: the
// revocation check, the authorization, the handoff step) is signed the same way, and
// echoes no Dialog-Context; a refusal before that goes unsigned, as there is no
// verified request to bind it to.
// A refused handoff that has a signed status to send back is answered in place of the
// handler, as WithHandoffs says. Any other refusal at the handoff step of a JSON-RPC
// request (MCP, A2A) is a JSON-RPC error response on 200 with the code and kind in its
// data, as the host protocol carries errors (handoffReply.writeError); the proof and
// credential checks before it answer with the problem document and HTTP status.
func (rc *Receiver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := &Verified{}
		v, reply, err := rc.verify(r.Context(), r, seen)
		var id string
		if rc.auditor != nil {
			id = requestID(w, r)
		}
		next := next
		switch {
		case reply != nil && reply.status != nil:
			// A refused handoff with a signed status (handoff-context 5.1, 5.3): the
			// handler does not run, and the status goes back in the host protocol's
			// reply, signed like any response.
			rc.refused(r, id, seen, err)
			next = reply
		case err != nil:
			rc.refused(r, id, seen, err)
			if seen.Signature != nil && rc.responseSigner != nil {
				// The HTTP signature verified, body and nonce and all: the refusal is this
				// receiver's answer to that request, signed and bound to it (its method,
				// path and nonce) like any other answer, so that a requester that
				// requires signed responses reads the receiver's code verified. It echoes
				// no Dialog-Context: a refused request takes no dialog (section 5). Without
				// a signer at hand it goes unsigned, its code kept, as before.
				if signer, serr := rc.responseSigner(r.Context()); serr == nil {
					rc.writeSigned(w, r, signer, seen.Signature.Nonce, "", false, func(w http.ResponseWriter) { reply.writeError(rc.challenged(w), err) })
					return
				}
			}
			reply.writeError(rc.challenged(w), err)
			return
		default:
			if v.Signature != nil && v.Signature.SignResponse && rc.responseSigner == nil {
				break // refused below, before the handler: not accepted
			}
			if rc.auditor != nil {
				if err := rc.auditAccepted(id, v); err != nil {
					noteRefusal(r, err)
					problem.Write(w, err)
					return
				}
			}
			r = r.WithContext(context.WithValue(r.Context(), verifiedKey{}, v))
		}
		if v.Signature == nil || (rc.responseSigner == nil && !v.Signature.SignResponse) {
			if v.Context != nil {
				w.Header().Set(HeaderName, v.Context.Value())
			}
			next.ServeHTTP(w, r)
			return
		}
		if rc.responseSigner == nil {
			err := errcode.New(errcode.ResponseNotSignable, "the client requires a signed response and this server has no response signer")
			rc.refused(r, id, v, err)
			problem.Write(w, err)
			return
		}
		var dlg string
		if v.Context != nil {
			dlg = v.Context.Value()
		}
		signer, err := rc.responseSigner(r.Context())
		if err != nil {
			noteRefusal(r, err)
			problem.Write(w, err)
			return
		}
		rc.writeSigned(w, r, signer, v.Signature.Nonce, dlg, rc.streamUnsigned && !v.Signature.SignResponse, func(w http.ResponseWriter) { next.ServeHTTP(w, r) })
	})
}

// writeSigned answers r, whose HTTP signature verified with nonce, with what serve
// writes, signed with signer (the receiver's response signer) and echoing dlg as the
// Dialog-Context (none when ""). What serve writes is held within MaxSignedResponseBody
// and then signed; with mayPass (WithStreamingUnsigned, and the request did not ask for
// a signed response) an event stream passes unsigned as it is written. A response that
// cannot be signed is not sent: its problem document is.
func (rc *Receiver) writeSigned(w http.ResponseWriter, r *http.Request, signer *httpsig.Signer, nonce, dlg string, mayPass bool, serve func(http.ResponseWriter)) {
	buf := &signedResponse{w: w, header: http.Header{}, mayPass: mayPass, dialogContext: dlg}
	if mayPass {
		serve(streamableResponse{buf})
	} else {
		serve(buf)
	}
	if buf.passing || buf.refused != nil {
		noteRefusal(r, buf.refused)
		return // passed through unsigned as it was written, or refused over the bound
	}
	h := buf.header
	if dlg != "" {
		h.Set(HeaderName, dlg)
	}
	status := buf.status
	if status == 0 {
		status = http.StatusOK
	}
	body := buf.body.Bytes()
	if err := signer.SignResponse(status, h, body, r, nonce); err != nil {
		noteRefusal(r, err)
		problem.Write(w, err)
		return
	}
	for k, vals := range h {
		w.Header()[k] = vals
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// MaxSignedResponseBody bounds a response that is buffered to be signed.
const MaxSignedResponseBody = 8 << 20
