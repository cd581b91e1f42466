package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Stage says which step of a token request failed; with the code it decides the OAuth
// error (ErrorFor).
type Stage int

const (
	StageRequest Stage = iota // the parameters (and, for AS A, the subject Txn-Token)
	StageClient               // client (workload) authentication
	StagePolicy               // what the authenticated workload may ask for
	StageSubject              // the subject token of a token exchange
	StageScope                // scope evaluation
	StageGrant                // the JWT authorization grant (RFC 7523: invalid_grant)
	StageIssue                // building and signing the token
)

type stagedError struct {
	stage Stage
	err   error
}

func (e *stagedError) Error() string { return e.err.Error() }
func (e *stagedError) Unwrap() error { return e.err }

// At marks err as a failure of stage s (nil stays nil).
func At(s Stage, err error) error {
	if err == nil {
		return nil
	}
	return &stagedError{stage: s, err: err}
}

// StageOf is the stage err was marked with (StageRequest when none).
func StageOf(err error) Stage {
	var se *stagedError
	if errors.As(err, &se) {
		return se.stage
	}
	return StageRequest
}

// ErrorFor maps a rejection to its OAuth error and HTTP status, the one mapping of
// every grant at the token endpoint (RFC 6749 section 5.2, RFC 8693 section 2.2.2,
// RFC 7523 section 3.1, oauth.md 1.11):
//
//	could not be completed (a key source or store did not answer)  temporarily_unavailable 503
//	a failure that is ours                                         server_error 500
//	grant_type                                                     unsupported_grant_type 400
//	a body over the bound                                          invalid_request 413
//	client authentication                                          invalid_client 401
//	audience or resource not served, unknown peer                  invalid_target 400
//	  (an ID-JAG's own resource claim not served: invalid_grant)
//	scope too broad, or the subject's scope unknown                invalid_scope 400
//	policy refuses the workload                                    unauthorized_client 400
//	the JWT authorization grant, its replay or binding             invalid_grant 400
//	anything else: parameters, token types, the subject token,
//	a replacement that breaks a rule                               invalid_request 400
func ErrorFor(err error) (string, int) {
	if errcode.KindOf(err) == errcode.Incomplete {
		return ErrTemporarilyUnavailable, http.StatusServiceUnavailable
	}
	code := errcode.CodeOf(err)
	switch code {
	case errcode.Internal, errcode.Unmapped:
		return ErrServerError, http.StatusInternalServerError
	case errcode.UnsupportedGrantType:
		return ErrUnsupportedGrantType, http.StatusBadRequest
	case errcode.BodyTooLarge:
		return ErrInvalidRequest, http.StatusRequestEntityTooLarge
	}
	st := StageOf(err)
	switch {
	case st == StageClient:
		return ErrInvalidClient, http.StatusUnauthorized
	case code == errcode.UnknownPeer || code == errcode.AudienceNotServed || code == errcode.ResourceNotAllowed && st != StageGrant:
		return ErrInvalidTarget, http.StatusBadRequest
	case code == errcode.ScopeTooBroad || code == errcode.ScopeUnknown:
		return ErrInvalidScope, http.StatusBadRequest
	case st == StagePolicy || code == errcode.WorkloadNotAllowed:
		return ErrUnauthorizedClient, http.StatusBadRequest
	case st == StageGrant:
		return ErrInvalidGrant, http.StatusBadRequest
	}
	return ErrInvalidRequest, http.StatusBadRequest
}

// WriteError sends the RFC 6749 section 5.2 error document for err with the OAuth
// error and status of ErrorFor: error_description from the errcode detail (which never
// holds a whole token; none for a 500), dialogtrust's code and kind, WWW-Authenticate
// on a 401 to a client that used the Authorization field, Retry-After on a 503, and no
// caching.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	oauth, status := ErrorFor(err)
	WriteErrorAs(w, r, err, oauth, status)
}

// WriteErrorAs is WriteError with the OAuth error and status given.
func WriteErrorAs(w http.ResponseWriter, r *http.Request, err error, oauth string, status int) {
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
// (%x20-21 / %x23-5B / %x5D-7E) and 512 octets.
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

// cutSpace splits a field value at its first space: the scheme and the credential.
func cutSpace(s string) (string, string, bool) {
	s = strings.TrimSpace(s)
	a, b, ok := strings.Cut(s, " ")
	return a, strings.TrimLeft(b, " "), ok
}
