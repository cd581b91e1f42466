package chaining

import (
	"errors"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/tts"
)

// stage says which step of a request failed; with the code it decides the OAuth error.
type stage int

const (
	stageRequest stage = iota // the parameters, the subject token (AS A)
	stageClient               // client (workload) authentication
	stagePolicy               // what the authenticated workload may ask for
	stageGrant                // the JWT authorization grant (AS B): RFC 7523 invalid_grant
	stageIssue                // building and signing
)

type stagedError struct {
	stage stage
	err   error
}

func (e *stagedError) Error() string { return e.err.Error() }
func (e *stagedError) Unwrap() error { return e.err }

func at(s stage, err error) error {
	if err == nil {
		return nil
	}
	return &stagedError{stage: s, err: err}
}

// OAuthError maps a rejection of a chaining handler to its OAuth error and status:
//
//	could not be completed (store, JWKS or metadata unreachable)  temporarily_unavailable 503
//	a failure that is ours                                        server_error 500
//	grant_type                                                    unsupported_grant_type 400
//	client authentication (WIT and proof)                         invalid_client 401
//	unknown peer, resource not served                             invalid_target 400 (RFC 8693 2.2.2)
//	scope wider than the subject's or than policy allows          invalid_scope 400
//	policy refuses the workload                                   unauthorized_client 400
//	the JWT authorization grant (AS B), its replay or binding     invalid_grant 400 (RFC 7523 3.1)
//	anything else: parameters, the subject Txn-Token (AS A)       invalid_request 400 (RFC 8693 2.2.2)
func OAuthError(err error) (string, int) {
	if errcode.KindOf(err) == errcode.Incomplete {
		return tts.ErrTemporarilyUnavailable, http.StatusServiceUnavailable
	}
	code := errcode.CodeOf(err)
	switch code {
	case errcode.Internal, errcode.Unmapped:
		return tts.ErrServerError, http.StatusInternalServerError
	case errcode.UnsupportedGrantType:
		return tts.ErrUnsupportedGrantType, http.StatusBadRequest
	case errcode.BodyTooLarge:
		return tts.ErrInvalidRequest, http.StatusRequestEntityTooLarge
	}
	var se *stagedError
	st := stageRequest
	if errors.As(err, &se) {
		st = se.stage
	}
	switch {
	case st == stageClient:
		return tts.ErrInvalidClient, http.StatusUnauthorized
	case code == errcode.UnknownPeer || code == errcode.AudienceNotServed:
		return tts.ErrInvalidTarget, http.StatusBadRequest
	case code == errcode.ScopeTooBroad || code == errcode.ScopeUnknown:
		return tts.ErrInvalidScope, http.StatusBadRequest
	case st == stagePolicy || code == errcode.WorkloadNotAllowed:
		return tts.ErrUnauthorizedClient, http.StatusBadRequest
	case st == stageGrant:
		return tts.ErrInvalidGrant, http.StatusBadRequest
	}
	return tts.ErrInvalidRequest, http.StatusBadRequest
}

func writeError(w http.ResponseWriter, r *http.Request, err error) {
	oauth, status := OAuthError(err)
	tts.WriteError(w, r, err, oauth, status)
}
