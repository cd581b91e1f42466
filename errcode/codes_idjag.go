package errcode

// Codes for the Identity Assertion JWT Authorization Grant (ID-JAG,
// draft-ietf-oauth-identity-assertion-authz-grant; package chaining, issue 28). Each is
// documented in docs/errors.md. They live in their own file so that the chaining codes
// of codes.go stay as they were.
const (
	// GrantClientMismatch: an ID-JAG's client_id is not the client that authenticated
	// the request presenting it (draft section 4.4.1: invalid_grant).
	GrantClientMismatch Code = "grant_client_mismatch"
	// SubjectClientMismatch: the identity assertion (ID token) given as subject_token
	// was not issued to the client that authenticated the token exchange: its aud does
	// not name that client (draft section 4.3.3).
	SubjectClientMismatch Code = "subject_client_mismatch"
	// ResourceNotAllowed: an ID-JAG request's resource (AS A: invalid_target), or an
	// ID-JAG's resource claim (AS B: invalid_grant), names no resource this
	// authorization server may grant for that peer or issues access tokens for
	// (RFC 8707 section 2 as the draft's sections 4.3.3 and 4.4.1 apply it).
	ResourceNotAllowed Code = "resource_not_allowed"
)
