package oauth

import (
	"context"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// ClientAuth is how the clients of one grant authenticate at the token endpoint
// (oauth.md 1.9; RFC 6749 sections 2.3 and 3.2.1). A grant handler says it
// (Handler.ClientAuth); the Endpoint runs it, once per request, after the grant's
// Check and before its Handle, so that no grant authenticates its client itself and
// none can forget to (in the style of fosite, whose token endpoint authenticates the
// client for every handler).
//
// No grant served here may skip it: the TTS names the requester in req_wl, and
// identity chaining binds the grant and the access token to the client's WIT key (a
// jwt-bearer request without client authentication, which RFC 7523 section 3.1
// allows, is refused). NewEndpoint therefore refuses a handler without one.
type ClientAuth struct {
	// Authenticators are the methods the grant accepts, in order: the first whose
	// credential the request carries decides (FirstPresent), and its result is final:
	// a present but invalid credential is a rejection, never a reason to try a weaker
	// method.
	Authenticators []Authenticator
	// Missing is the text of the rejection (errcode.Unauthenticated, invalid_client)
	// of a request that carries none of their credentials: it says what the grant
	// accepts.
	Missing string
	// Refused, when set, names a credential the grant never accepts where one it
	// accepts was expected: the TTS names a Txn-Token so (txn_token_not_credential,
	// oauth.md 1.9 item 4). It is asked only when authentication did not succeed
	// (present is false when no method's credential was there, true when the one
	// present failed), which keeps it off the path that issues; a non-nil error
	// replaces the rejection.
	Refused func(r *http.Request, tr *TokenRequest, present bool) error
}

// authenticate runs a on a parsed request: it records the method tried and the
// authenticated client in rec, and marks every rejection StageClient (invalid_client,
// 401; temporarily_unavailable when a key source or store did not answer).
func (a *ClientAuth) authenticate(ctx context.Context, r *http.Request, tr *TokenRequest, rec *Record) (*Client, error) {
	auth := FirstPresent(a.Authenticators, r, tr)
	if auth == nil {
		if err := a.refused(r, tr, false); err != nil {
			return nil, err
		}
		return nil, At(StageClient, errcode.New(errcode.Unauthenticated, "%s", a.Missing))
	}
	rec.Method = auth.Name()
	c, err := auth.Authenticate(ctx, r, tr)
	if err != nil {
		if rerr := a.refused(r, tr, true); rerr != nil {
			return nil, rerr
		}
		return nil, At(StageClient, err)
	}
	rec.Requester = c.IDString()
	return c, nil
}

func (a *ClientAuth) refused(r *http.Request, tr *TokenRequest, present bool) error {
	if a.Refused == nil {
		return nil
	}
	return At(StageClient, a.Refused(r, tr, present))
}
