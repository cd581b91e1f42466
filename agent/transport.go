package agent

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/httpbody"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// maxRequestBody bounds a request body the transport reads to digest and sign.
const maxRequestBody = 8 << 20

type ctxKey int

const (
	dialogKey ctxKey = iota
	provenanceKey
	tokenKey
)

// WithDialog puts the dialog a request belongs to on its context; the Transport sends
// its Dialog-Context value octet for octet.
func WithDialog(ctx context.Context, dc *dialog.Context) context.Context {
	return context.WithValue(ctx, dialogKey, dc)
}

// WithProvenance puts the provenance a forwarder sends (dialog.Verified.Forward).
func WithProvenance(ctx context.Context, p *dialog.Provenance) context.Context {
	return context.WithValue(ctx, provenanceKey, p)
}

// WithTxnTokenSource overrides the Transport's token source for one request (for
// example Forwarded, the token received with the request being handled).
func WithTxnTokenSource(ctx context.Context, s TxnTokenSource) context.Context {
	return context.WithValue(ctx, tokenKey, s)
}

// Transport signs outgoing requests as the package documentation describes.
type Transport struct {
	// Base carries the signed request (default http.DefaultTransport). DefaultTransport
	// keeps only 2 idle connections per host (http.DefaultMaxIdleConnsPerHost), so with
	// more requests in flight to one recipient each further one dials a new connection;
	// for concurrent use give a clone with MaxIdleConnsPerHost set to the concurrency.
	Base http.RoundTripper
	// Source gives the agent's WIT and its key. Required.
	Source wit.Source
	// Tokens gives the Txn-Token of a dialog (optional; per-request override with
	// WithTxnTokenSource). Without one no Txn-Token is sent.
	Tokens TxnTokenSource
	// Proof is proof.HTTPSig (the zero value) or proof.WPT.
	Proof proof.Method
	// BindRequest (WPT only) binds the request's method, path, query and body (its
	// Content-Digest) through the WPT's oth (wpt.RequestOptions.BindRequest); without it
	// a WPT binds none of them. The recipient must know the oth keys (package wpt's
	// receivers do), or it refuses the WPT. An HTTP signature covers them always.
	BindRequest bool
	// Responses verifies signed responses (the server's WIT, by trust configuration).
	// With HTTPSig a signed response is always verified, so it is required.
	Responses *httpsig.Verifier
	// RequireSignedResponse sends wimse-sign-response and refuses an unsigned response.
	RequireSignedResponse bool
	// Audience names the recipient for wimse-aud or the WPT aud; default: the target
	// URI without query and fragment.
	Audience func(*http.Request) string
	// ResponseSigners names the workloads whose signed responses are believed; a
	// signature that verifies under another workload's WIT is refused
	// (response_signer_mismatch). Default: every workload of the trust domain of the
	// agent's own WIT, never another (section 11: a dialog does not cross a trust
	// boundary). A linked dialog's requests use the peer's (Linked.Signers).
	ResponseSigners *Signers
}

// RoundTrip implements http.RoundTripper. It does not modify req.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t.Source == nil {
		return nil, errcode.New(errcode.InvalidRequest, "agent transport has no WIT source")
	}
	cred, err := t.Source.Credential(ctx)
	if err != nil {
		return nil, err
	}
	out := req.Clone(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		body, err := httpbody.Read(req.Body, maxRequestBody, "request body")
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
	}
	dc, _ := ctx.Value(dialogKey).(*dialog.Context)
	if dc != nil {
		dc.Set(out.Header)
	}
	if p, _ := ctx.Value(provenanceKey).(*dialog.Provenance); p != nil {
		out.Header.Set(dialog.ProvenanceHeader, p.Value())
	}
	tokens := t.Tokens
	if s, ok := ctx.Value(tokenKey).(TxnTokenSource); ok {
		tokens = s
	}
	if tokens != nil && dc != nil {
		tok, err := tokens.TxnToken(ctx, dc.DLG())
		if err != nil {
			return nil, err
		}
		out.Header.Set(txntoken.HeaderName, tok)
	}
	aud := audienceOf(out)
	if t.Audience != nil {
		aud = t.Audience(out)
	}
	var nonce string
	switch t.Proof {
	case proof.WPT:
		// The provenance field is bound as a context token (oth).
		if err := wpt.SignRequest(out, cred.Key, cred.WIT, aud, wpt.RequestOptions{ContextTokenFields: []string{dialog.ProvenanceHeader}, BindRequest: t.BindRequest}); err != nil {
			return nil, err
		}
	default:
		if t.Responses == nil {
			return nil, errcode.New(errcode.InvalidRequest, "HTTP-signature transport needs a response verifier")
		}
		if nonce, err = httpsig.NewSigner(cred.Key, cred.WIT).SignRequest(out, aud, httpsig.RequestSignResponse(t.RequireSignedResponse)); err != nil {
			return nil, err
		}
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(out)
	if err != nil || t.Proof == proof.WPT {
		return res, err
	}
	// A signed response is always verified; an unsigned one only passes when it was not
	// demanded (http-signature-07 section 3.5).
	vr, err := t.Responses.VerifyResponse(ctx, res, out, nonce, t.RequireSignedResponse)
	if err != nil {
		if errcode.CodeOf(err) == errcode.MissingCredential && res.StatusCode >= 400 && len(res.Header.Values("Signature-Input")) == 0 {
			// An unsigned refusal: the upstream's own answer, or one a party on the
			// path made up. Either way no success; its code, not the missing
			// signature, says what went wrong (refusal.go).
			err = unverifiedRefusal(res, err)
		}
		res.Body.Close()
		return nil, err
	}
	if vr != nil {
		// Section 5: the server the request was for signs the response. A valid WIT
		// of any other workload proves nothing about this request.
		signers := t.ResponseSigners
		if signers == nil {
			if signers, err = ownSigners(cred.WIT); err != nil {
				res.Body.Close()
				return nil, err
			}
		}
		if err := checkSigner(signers, vr.WIT.Subject); err != nil {
			res.Body.Close()
			return nil, err
		}
	}
	if vr != nil && dc != nil {
		// Section 7: the requester MUST check that the response's Dialog-Context
		// matches its request's. A signed refusal echoes none: the receiver refused
		// the request after its proof verified, and a refused request takes no dialog
		// (section 5). It is passed on as the server's answer, verified; any other
		// signed response without the echo is refused.
		got, err := dialog.FromHeader(res.Header)
		if err != nil || got == nil && !signedRefusal(res) || got != nil && !got.Equal(dc) {
			res.Body.Close()
			return nil, errcode.New(errcode.DialogContextMismatch, "the signed response does not echo the request's Dialog-Context")
		}
	}
	if vr != nil {
		markVerified(res, out, vr.WIT.Subject)
	}
	return res, nil
}

// signedRefusal reports whether res, signed and verified, is a refusal as a receiver
// signs one (dialog.Receiver.Middleware): HTTP status 400 or more, or a JSON-RPC error
// on 200 carrying a code (jsonrpcRefusal). Its body stays whole for the caller.
func signedRefusal(res *http.Response) bool {
	if res.StatusCode >= 400 {
		return true
	}
	return jsonrpcRefusal(res) != nil
}

// audienceOf is the default recipient name: the target URI without query and fragment
// (wpt-02 section 2, http-signature-07 section 3.2).
func audienceOf(r *http.Request) string {
	u := *r.URL
	u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = "", "", "", false
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}
