package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/problem"
)

// UnverifiedRefusal marks the error of an unsigned refusal: what the upstream, or a
// party on the path, said went wrong, in one of two answers that are never taken as a
// response:
//
//   - to a request that asked for a signed response, an unsigned answer of HTTP 4xx or
//     5xx with a problem document (or a JSON-RPC error carrying one in its data): the
//     Transport hands no unsigned answer to a caller that required a signed one
//     (http-signature-07 section 3.5); without the code, the missing signature would
//     hide the upstream's reason (a wimse-aud its receiver does not accept, a request
//     outside any dialog it requires);
//   - to a dialog's first request (Agent.Start), a JSON-RPC error on HTTP 200 carrying
//     the receiver's code and kind in its data and echoing no Dialog-Context: the
//     receiver refused the request after its proof verified (its authorization,
//     dialog.WithAuthorizer, or the handoff step) and so did not establish the dialog
//     (section 5); without the code, the missing echo would hide the receiver's reason
//     behind dialog_context_mismatch.
//
// The error carries the upstream's code and kind; its detail says that nothing of it
// was verified.
type UnverifiedRefusal struct {
	// Status is the HTTP status the upstream answered with (200 for a JSON-RPC error).
	Status int
}

func (u *UnverifiedRefusal) Error() string {
	return fmt.Sprintf("an unsigned refusal, HTTP %d", u.Status)
}

// maxRefusalBody bounds what is read of an unsigned refusal: a problem document of
// dialogtrust's has at most problem.MaxDetail octets of detail.
const maxRefusalBody = 16 << 10

// unverifiedRefusal reads res, unsigned with status 400 or more, as the upstream's
// refusal: its code and kind with UnverifiedRefusal in the chain, or cause (the
// missing signature) when it carries no problem document, the status then named.
func unverifiedRefusal(res *http.Response, cause error) error {
	body, err := io.ReadAll(io.LimitReader(res.Body, maxRefusalBody+1))
	if err != nil || len(body) > maxRefusalBody {
		return errcode.Wrap(errcode.MissingCredential, cause, "the upstream's answer, HTTP %d, is unsigned and no readable problem document", res.StatusCode)
	}
	remote := problem.Read(res.StatusCode, body)
	var e *errcode.Error
	code := errcode.CodeOf(remote)
	if code == errcode.Unmapped || code == "" || !errors.As(remote, &e) {
		return errcode.Wrap(errcode.MissingCredential, cause, "the upstream's answer, HTTP %d, is unsigned and carries no problem document", res.StatusCode)
	}
	return &errcode.Error{Code: code, Kind: e.Kind, Err: &UnverifiedRefusal{Status: res.StatusCode},
		Detail: fmt.Sprintf("refused by the upstream, HTTP %d, unsigned and so not verified: %s", res.StatusCode, e.Detail)}
}

// SignedRefusal marks the error Agent.Start returns for a dialog's first request that
// the receiver refused with a JSON-RPC error on HTTP 200 echoing no Dialog-Context, signed:
// the Transport verified the signature (made by a workload of Transport.ResponseSigners,
// bound to the request's nonce), so the code and kind are the receiver's own. A receiver
// with a response signer signs its refusals of requests whose HTTP signature verified
// (dialog.Receiver.Middleware).
type SignedRefusal struct {
	// Status is the HTTP status the receiver answered with (200 for a JSON-RPC error).
	Status int
	// Signer is the workload that signed the refusal.
	Signer identifier.ID
}

func (s *SignedRefusal) Error() string {
	return fmt.Sprintf("a refusal signed by %s, HTTP %d", s.Signer, s.Status)
}

// firstRequestRefusal reads res, a 2xx answer to a dialog's first request that echoes
// no Dialog-Context, as the receiver's refusal of that request (jsonrpcRefusal): its
// code and kind with SignedRefusal in the chain when the Transport verified res's
// signature (verifiedSigner), UnverifiedRefusal otherwise. Nil when res is not such a
// refusal: the caller refuses it then as it did (dialog_context_mismatch), so an answer
// that is not a refusal never passes without the echo. At most maxRefusalBody octets of
// res.Body are read.
func firstRequestRefusal(res *http.Response) error {
	e := jsonrpcRefusal(res)
	if e == nil {
		return nil
	}
	if signer, ok := verifiedSigner(res); ok {
		e.Err = &SignedRefusal{Status: res.StatusCode, Signer: signer}
		e.Detail = fmt.Sprintf("the dialog's first request was refused by the upstream (a JSON-RPC error on HTTP 200 that echoes no Dialog-Context: the dialog was not established), signed by %s: remote: %s", signer, e.Detail)
		return e
	}
	e.Err = &UnverifiedRefusal{Status: res.StatusCode}
	e.Detail = fmt.Sprintf("the dialog's first request was refused by the upstream (a JSON-RPC error on HTTP 200 that echoes no Dialog-Context: the dialog was not established), unsigned and so not verified: remote: %s", e.Detail)
	return e
}

// jsonrpcRefusal reads res as a receiver's refusal of a JSON-RPC request: HTTP 200,
// application/json, and a body of at most maxRefusalBody octets that is a JSON-RPC
// error response with no result member (not null, not in another case, not named
// twice) whose error data carries a code and kind (hostproto.WriteError, the one form
// of a receiver's refusal of a JSON-RPC request). It returns that code and kind, with
// the remote detail, or nil when res is anything else. The body is read only when the
// status and content type fit, and is put back whole (peekBody).
func jsonrpcRefusal(res *http.Response) *errcode.Error {
	if res.StatusCode != http.StatusOK {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil
	}
	// Only now, the fields fitting, is the body read: an event stream or any other
	// answer is not held up waiting for octets it may send late or never.
	body, ok := peekBody(res)
	if !ok {
		return nil
	}
	// Result has a place so that DecodeObject refuses it named twice or in another
	// case: a refusal has no result member at all, not even null (hostproto.WriteError
	// writes none; JSON-RPC 2.0 section 5), so no reader of the same octets, first-wins
	// or case-folding (Go's encoding/json, as SDKs decode), finds a result beside the
	// error (red team 11).
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Data *problem.Details `json:"data"`
		} `json:"error"`
	}
	if netjson.DecodeObject(body, &env) != nil || env.JSONRPC != "2.0" || env.Result != nil || env.Error == nil || env.Error.Data == nil {
		return nil
	}
	d := env.Error.Data
	kind := errcode.Failed
	switch d.Kind {
	case errcode.Failed.String():
	case errcode.Incomplete.String():
		kind = errcode.Incomplete
	default:
		return nil
	}
	if d.Code == "" || errcode.Code(d.Code) == errcode.Unmapped {
		return nil
	}
	return &errcode.Error{Code: errcode.Code(d.Code), Kind: kind, Detail: d.Detail}
}

// peekBody reads res.Body whole when it has at most maxRefusalBody octets, and puts
// what it read back, so that the caller of the response still reads all of it; ok is
// false (and nothing is lost) when it is longer or cannot be read.
func peekBody(res *http.Response) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(res.Body, maxRefusalBody+1))
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), res.Body), res.Body}
	return body, err == nil && len(body) <= maxRefusalBody
}

// verifiedKey is the context key under which Transport records, on the request of a
// response whose signature it verified (res.Request), the workload that signed it.
type verifiedKey struct{}

// verifiedMark is what verifiedKey holds: the signer, and the very response it was
// verified on. A context carries its parent's values, so a request sent with the
// context of a verified response's request (res.Request.Context()) carries the mark
// too: only the response it was set on is verified by it (red team 11).
type verifiedMark struct {
	res    *http.Response
	signer identifier.ID
}

// markVerified records on res that its signature verified, made by signer. Only the
// Transport sets it: nothing received can.
func markVerified(res *http.Response, out *http.Request, signer identifier.ID) {
	req := res.Request
	if req == nil {
		req = out
	}
	res.Request = req.WithContext(context.WithValue(req.Context(), verifiedKey{}, &verifiedMark{res: res, signer: signer}))
}

// verifiedSigner is the workload whose signature of res the Transport verified; ok is
// false for a response it did not verify (unsigned, to a WPT, or not through it), also
// when res's request inherited another response's mark through its context.
func verifiedSigner(res *http.Response) (identifier.ID, bool) {
	if res.Request == nil {
		return identifier.ID{}, false
	}
	m, ok := res.Request.Context().Value(verifiedKey{}).(*verifiedMark)
	if !ok || m.res != res {
		return identifier.ID{}, false
	}
	return m.signer, true
}

// ownSigners is the default of Transport.ResponseSigners: the trust domain of the
// agent's own WIT (read, not verified: it is the agent's own credential).
func ownSigners(rawWIT string) (*Signers, error) {
	t, err := jose.Parse(rawWIT, 0)
	if err != nil {
		return nil, err
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if err := netjson.DecodeObject(t.Payload, &c); err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "the agent's WIT")
	}
	id, err := identifier.Parse(c.Sub)
	if err != nil {
		return nil, err
	}
	return TrustDomainSigners(id.TrustDomain())
}
