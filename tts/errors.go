package tts

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// OAuth error codes of RFC 6749 section 5.2 and RFC 8693 section 2.2.2, plus the two a
// token endpoint answers with when the fault is not the client's.
const (
	ErrInvalidRequest         = "invalid_request"
	ErrInvalidClient          = "invalid_client"
	ErrInvalidGrant           = "invalid_grant"
	ErrUnauthorizedClient     = "unauthorized_client"
	ErrUnsupportedGrantType   = "unsupported_grant_type"
	ErrInvalidScope           = "invalid_scope"
	ErrInvalidTarget          = "invalid_target"
	ErrServerError            = "server_error"
	ErrTemporarilyUnavailable = "temporarily_unavailable"
)

// stage says which step of the request failed; with the code it decides the OAuth error.
type stage int

const (
	stageRequest stage = iota // the parameters
	stageClient               // client (workload) authentication
	stagePolicy               // what the authenticated workload may ask for
	stageSubject              // the subject token
	stageScope                // scope evaluation
	stageIssue                // building and signing the token
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

// ErrorResponse is the JSON body of a refused token request (oauth.ErrorResponse).
//
// Deprecated: use oauth.ErrorResponse.
type ErrorResponse = oauth.ErrorResponse

// OAuthError maps a rejection to its OAuth error and HTTP status (oauth.md 1.11):
//
//	could not be completed (a key source or store did not answer)  temporarily_unavailable 503
//	a failure that is ours                                         server_error 500
//	grant_type                                                     unsupported_grant_type 400
//	audience not served                                            invalid_target 400
//	scope too broad, or the subject's scope unknown                invalid_scope 400
//	client authentication                                          invalid_client 401
//	policy refuses the workload                                    unauthorized_client 400
//	anything else: parameters, token types, the subject token,
//	a replacement that breaks a rule                               invalid_request 400
func OAuthError(err error) (string, int) {
	code := errcode.CodeOf(err)
	if errcode.KindOf(err) == errcode.Incomplete {
		return ErrTemporarilyUnavailable, http.StatusServiceUnavailable
	}
	switch code {
	case errcode.Internal, errcode.Unmapped:
		return ErrServerError, http.StatusInternalServerError
	case errcode.UnsupportedGrantType:
		return ErrUnsupportedGrantType, http.StatusBadRequest
	case errcode.AudienceNotServed:
		return ErrInvalidTarget, http.StatusBadRequest
	case errcode.ScopeTooBroad, errcode.ScopeUnknown:
		return ErrInvalidScope, http.StatusBadRequest
	case errcode.BodyTooLarge:
		return ErrInvalidRequest, http.StatusRequestEntityTooLarge
	}
	var se *stagedError
	if errors.As(err, &se) {
		switch se.stage {
		case stageClient:
			return ErrInvalidClient, http.StatusUnauthorized
		case stagePolicy:
			return ErrUnauthorizedClient, http.StatusBadRequest
		}
	}
	if code == errcode.WorkloadNotAllowed {
		return ErrUnauthorizedClient, http.StatusBadRequest
	}
	return ErrInvalidRequest, http.StatusBadRequest
}

// writeError sends the RFC 6749 error document. The description is the errcode detail,
// which never holds a whole token; a server_error says nothing more.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	oauth, status := OAuthError(err)
	WriteError(w, r, err, oauth, status)
}

// WriteError sends the RFC 6749 error document for err with the given OAuth error and
// status: error_description from the errcode detail (which never holds a whole token;
// none for a 500), dialogtrust's code and kind, WWW-Authenticate on a 401 to a client
// that used the Authorization field, Retry-After on a 503, and no caching. Exported for
// the other grant handlers of a token endpoint (package chaining), whose mapping from
// code to OAuth error differs (RFC 7523: invalid_grant).
func WriteError(w http.ResponseWriter, r *http.Request, err error, oauth string, status int) {
	resp := ErrorResponse{Error: oauth, Code: string(errcode.CodeOf(err)), Kind: errcode.KindOf(err).String()}
	var e *errcode.Error
	if errors.As(err, &e) && status != http.StatusInternalServerError {
		resp.ErrorDescription = sanitizeDescription(e.Detail)
	}
	h := w.Header()
	if status == http.StatusUnauthorized {
		// RFC 6749 section 5.2: a client that authenticated with the Authorization
		// field gets a challenge for the scheme it used.
		if scheme := authScheme(r); scheme != "" {
			h.Set("WWW-Authenticate", scheme+` error="invalid_client"`)
		}
	}
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "5")
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func authScheme(r *http.Request) string {
	v := r.Header.Get("Authorization")
	if v == "" {
		return ""
	}
	scheme, _, _ := cutSpace(v)
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return ""
		}
	}
	return scheme
}

// sanitizeDescription keeps error_description within RFC 6749's character set
// (%x20-21 / %x23-5B / %x5D-7E).
func sanitizeDescription(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c > 0x7e {
			b[i] = '\''
			if c < 0x20 || c > 0x7e {
				b[i] = '?'
			}
		}
	}
	if len(b) > 512 {
		b = append(b[:509], "..."...)
	}
	return string(b)
}

// ReadError turns a token endpoint's error document back into an *errcode.Error with
// the remote code and kind (clients use it).
func ReadError(status int, body []byte) error {
	var d ErrorResponse
	if err := json.Unmarshal(body, &d); err != nil || d.Error == "" {
		if status == http.StatusServiceUnavailable {
			return errcode.Unavailable(errcode.Unmapped, nil, "HTTP %d without an error document", status)
		}
		return errcode.New(errcode.Unmapped, "HTTP %d without an error document", status)
	}
	code := errcode.Code(d.Code)
	if code == "" {
		code = errcode.Unmapped
	}
	kind := errcode.Failed
	if d.Kind == errcode.Incomplete.String() {
		kind = errcode.Incomplete
	}
	return &errcode.Error{Code: code, Kind: kind, Detail: "token endpoint: " + d.Error + ": " + d.ErrorDescription}
}
