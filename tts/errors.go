package tts

import (
	"net/http"

	"github.com/dialogtrust/dialogtrust/oauth"
)

// OAuth error codes (package oauth's).
//
// Deprecated: use the oauth constants of the same names.
const (
	ErrInvalidRequest         = oauth.ErrInvalidRequest
	ErrInvalidClient          = oauth.ErrInvalidClient
	ErrInvalidGrant           = oauth.ErrInvalidGrant
	ErrUnauthorizedClient     = oauth.ErrUnauthorizedClient
	ErrUnsupportedGrantType   = oauth.ErrUnsupportedGrantType
	ErrInvalidScope           = oauth.ErrInvalidScope
	ErrInvalidTarget          = oauth.ErrInvalidTarget
	ErrServerError            = oauth.ErrServerError
	ErrTemporarilyUnavailable = oauth.ErrTemporarilyUnavailable
)

// The steps of a token request, which with the code decide the OAuth error
// (oauth.ErrorFor).
const (
	stageRequest = oauth.StageRequest // the parameters
	stageClient  = oauth.StageClient  // client (workload) authentication
	stagePolicy  = oauth.StagePolicy  // what the authenticated workload may ask for
	stageSubject = oauth.StageSubject // the subject token
	stageScope   = oauth.StageScope   // scope evaluation
	stageIssue   = oauth.StageIssue   // building and signing the token
)

func at(s oauth.Stage, err error) error { return oauth.At(s, err) }

// ErrorResponse is the JSON body of a refused token request (oauth.ErrorResponse).
//
// Deprecated: use oauth.ErrorResponse.
type ErrorResponse = oauth.ErrorResponse

// OAuthError maps a rejection to its OAuth error and HTTP status (oauth.md 1.11).
//
// Deprecated: use oauth.ErrorFor, the one mapping of every grant at the endpoint.
func OAuthError(err error) (string, int) { return oauth.ErrorFor(err) }

// WriteError sends the RFC 6749 error document for err with the given OAuth error and
// status.
//
// Deprecated: use oauth.WriteError (or oauth.WriteErrorAs).
func WriteError(w http.ResponseWriter, r *http.Request, err error, oauthErr string, status int) {
	oauth.WriteErrorAs(w, r, err, oauthErr, status)
}

// ReadError turns a token endpoint's error document back into an *errcode.Error.
//
// Deprecated: use oauth.ReadError.
func ReadError(status int, body []byte) error { return oauth.ReadError(status, body) }
