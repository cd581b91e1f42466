package agent

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/problem"
)

// UnverifiedRefusal marks the error of an unsigned refusal (HTTP 4xx or 5xx with a
// problem document, or a JSON-RPC error in its data) to a request that asked for a
// signed response: what the upstream, or a party on the path, said went wrong. The
// error carries that document's code and kind; its detail says that nothing of it was
// verified. It is a refusal, never a response: the Transport hands no unsigned answer
// to a caller that required a signed one (http-signature-07 section 3.5). Without the
// code, the missing signature would hide the upstream's reason (a wimse-aud its
// receiver does not accept, a request outside any dialog it requires).
type UnverifiedRefusal struct {
	// Status is the HTTP status the upstream answered with.
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
