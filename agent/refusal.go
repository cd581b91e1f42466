package agent

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
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

// firstRequestRefusal reads res, a 2xx answer to a dialog's first request that echoes
// no Dialog-Context, as the receiver's refusal of that request: a JSON-RPC error
// response on HTTP 200, application/json, with no result, whose error data carries a
// code and kind (hostproto.WriteError, the one form of a receiver's refusal of a
// JSON-RPC request). Nil when res is anything else: the caller refuses it then as it
// did (dialog_context_mismatch), so an answer that is not a refusal never passes
// without the echo. At most maxRefusalBody octets of res.Body are read.
func firstRequestRefusal(res *http.Response) error {
	if res.StatusCode != http.StatusOK {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxRefusalBody+1))
	if err != nil || len(body) > maxRefusalBody || hostproto.IsResult(body) {
		return nil
	}
	var env struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Data *problem.Details `json:"data"`
		} `json:"error"`
	}
	if netjson.DecodeObject(body, &env) != nil || env.JSONRPC != "2.0" || env.Error == nil || env.Error.Data == nil {
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
	return &errcode.Error{Code: errcode.Code(d.Code), Kind: kind, Err: &UnverifiedRefusal{Status: res.StatusCode},
		Detail: fmt.Sprintf("the dialog's first request was refused by the upstream (a JSON-RPC error on HTTP 200 that echoes no Dialog-Context: the dialog was not established), unsigned and so not verified: remote: %s", d.Detail)}
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
