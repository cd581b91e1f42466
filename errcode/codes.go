package errcode

// Codes shared with the WIMSE conformance suite (wimsey SOURCE.md). Do not rename.
const (
	MalformedToken      Code = "malformed_token"
	TokenTooLong        Code = "token_too_long"
	InvalidEncoding     Code = "invalid_encoding"
	UnsupportedCritical Code = "unsupported_critical"
	WrongType           Code = "wrong_type"
	UnsupportedAlg      Code = "unsupported_alg"
	InvalidSignature    Code = "invalid_signature"
	InvalidKey          Code = "invalid_key"
	Expired             Code = "expired"
	IssuedInFuture      Code = "issued_in_future"
	IssuerMismatch      Code = "issuer_mismatch"
	AudienceMismatch    Code = "audience_mismatch"

	WITBindingMismatch        Code = "wit_binding_mismatch"
	TxnTokenBindingMismatch   Code = "txn_token_binding_mismatch"
	OtherTokenBindingMismatch Code = "other_token_binding_mismatch"
	LifetimeTooLong           Code = "lifetime_too_long"

	MissingComponent         Code = "missing_component"
	UnsupportedComponent     Code = "unsupported_component"
	InvalidComponentValue    Code = "invalid_component_value"
	MissingRequiredComponent Code = "missing_required_component"
	InvalidTimeWindow        Code = "invalid_time_window"
	TooOld                   Code = "too_old"
	CreatedInFuture          Code = "created_in_future"
	ParseError               Code = "parse_error"
	LabelMismatch            Code = "label_mismatch"
	MalformedSignature       Code = "malformed_signature"
	ContentDigestMismatch    Code = "content_digest_mismatch"
	MissingParameter         Code = "missing_parameter"
	ForbiddenParameter       Code = "forbidden_parameter"
	WrongTag                 Code = "wrong_tag"
	RequestNonceMismatch     Code = "request_nonce_mismatch"
	NoWIMSESignature         Code = "no_wimse_signature"
	AmbiguousWIMSESignature  Code = "ambiguous_wimse_signature"

	MissingConfirmationAlg     Code = "missing_confirmation_alg"
	ForbiddenConfirmationAlg   Code = "forbidden_confirmation_alg"
	UnsupportedConfirmationAlg Code = "unsupported_confirmation_alg"

	IdentifierTooLong            Code = "identifier_too_long"
	UnsupportedScheme            Code = "unsupported_scheme"
	HasQuery                     Code = "has_query"
	HasFragment                  Code = "has_fragment"
	HasUserInfo                  Code = "has_user_info"
	HasPort                      Code = "has_port"
	EmptyTrustDomain             Code = "empty_trust_domain"
	TrustDomainTooLong           Code = "trust_domain_too_long"
	InvalidTrustDomainChar       Code = "invalid_trust_domain_char"
	EmptyPathSegment             Code = "empty_path_segment"
	DotSegment                   Code = "dot_segment"
	InvalidPathChar              Code = "invalid_path_char"
	BadPercentEncoding           Code = "bad_percent_encoding"
	NonNormalizedPercentEncoding Code = "non_normalized_percent_encoding"

	CertificateParseError Code = "certificate_parse_error"
	CertificateNotValid   Code = "certificate_not_valid"
	MissingIdentifier     Code = "missing_identifier"
	MultipleIdentifiers   Code = "multiple_identifiers"

	// Unmapped is reported for an error that carries no code. It must never be
	// produced on purpose; a test that sees it has found a bug.
	Unmapped Code = "unmapped"
)

// Codes added by dialogtrust. Each is documented in README.md ("Error codes").
const (
	// Replayed: a jti, nonce or other single-use value was already claimed.
	Replayed Code = "replayed"
	// StoreUnavailable: the replay or record store did not answer (Incomplete).
	StoreUnavailable Code = "store_unavailable"
	// KeysUnavailable: a trust source (JWKS file or URL) could not be read (Incomplete).
	KeysUnavailable Code = "keys_unavailable"
	// UnknownKey: no trusted key has the token's kid (or no kid and not exactly one key).
	UnknownKey Code = "unknown_key"
	// UntrustedIssuer: the issuer or trust domain has no trust configuration.
	UntrustedIssuer Code = "untrusted_issuer"
	// ForbiddenHeader: a JOSE header that could direct key selection (jku, x5u, jwk,
	// x5c) or otherwise is refused by profile.
	ForbiddenHeader Code = "forbidden_header"
	// MissingClaim: a claim the token type requires is absent or has the wrong type.
	MissingClaim Code = "missing_claim"
	// InvalidClaim: a claim is present but its value is not acceptable.
	InvalidClaim Code = "invalid_claim"
	// NotYetValid: nbf is in the future.
	NotYetValid Code = "not_yet_valid"
	// DuplicateField: an HTTP field that must occur once occurs more than once.
	DuplicateField Code = "duplicate_field"
	// MissingCredential: a required HTTP credential field (WIT, proof) is absent.
	MissingCredential Code = "missing_credential"
	// DialogContextNotCovered: the request carries Dialog-Context but its WIMSE HTTP
	// signature does not cover it (dialog-binding section 7).
	DialogContextNotCovered Code = "dialog_context_not_covered"
	// DialogContextBindingMismatch: WPT dth missing or not the hash of the
	// Dialog-Context field value (dialog-binding section 8).
	DialogContextBindingMismatch Code = "dialog_context_binding_mismatch"
	// BodyTooLarge: a message body exceeds the configured bound.
	BodyTooLarge Code = "body_too_large"
	// InvalidRequest: a local API or CLI input is malformed (not a credential failure).
	InvalidRequest Code = "invalid_request"
	// Unauthenticated: no acceptable authentication was presented at all.
	Unauthenticated Code = "unauthenticated"
	// SubjectNotAllowed: policy does not let the authenticated identity obtain this subject.
	SubjectNotAllowed Code = "subject_not_allowed"
	// AlgNotAllowed: policy does not allow this key algorithm here.
	AlgNotAllowed Code = "alg_not_allowed"
	// Internal: the server failed in a way that is not the caller's fault (logged, hashed).
	Internal Code = "internal_error"
)

// Codes for dialogs (package dialog; dialog-binding-wimse-oauth). Documented in README.md.
const (
	// InvalidDialogContext: the Dialog-Context field is malformed, not canonical, or
	// lacks dlg or initiator (dialog-binding sections 4, 7).
	InvalidDialogContext Code = "invalid_dialog_context"
)
