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

// Codes added by dialogtrust. Each is documented in docs/errors.md.
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

// Codes added for the WIT issuer (issue 3). Each is documented in docs/errors.md.
const (
	// IssuerUnavailable: a WIT issuer could not be reached or gave no usable answer
	// (Incomplete).
	IssuerUnavailable Code = "issuer_unavailable"
	// SVIDUnavailable: the workload holds no current X.509-SVID from the SPIFFE
	// Workload API to authenticate to its WIT issuer with: none has arrived yet, or the
	// one held has expired (Incomplete).
	SVIDUnavailable Code = "svid_unavailable"
)

// Codes for signed handoffs (package handoff; draft-srivastava-agentproto-handoff-context-01).
// The first twelve name the draft's Reason values (section 2) one to one; handoff.Reason
// maps between the two. Each is documented in docs/errors.md.
const (
	// HandoffBadSignature: reason "bad-signature": the signed form (typ or content type,
	// v, type, CDDL) or the signature of a signed handoff is not acceptable.
	HandoffBadSignature Code = "handoff_bad_signature"
	// HandoffUntrustedKey: reason "untrusted-key": no key bound to iss in the trust
	// configuration has the message's kid.
	HandoffUntrustedKey Code = "handoff_untrusted_key"
	// HandoffWrongAudience: reason "wrong-audience": aud is not this agent.
	HandoffWrongAudience Code = "handoff_wrong_audience"
	// HandoffStale: reason "stale": outside the freshness window (section 5.2).
	HandoffStale Code = "handoff_stale"
	// HandoffReplay: reason "replay": the (iss, hop) pair may have been seen by a
	// receiver that lost its records (section 8.4).
	HandoffReplay Code = "handoff_replay"
	// HandoffEquivocation: reason "equivocation": a second offer for one (iss, hop) with
	// different octets (section 5.6).
	HandoffEquivocation Code = "handoff_equivocation"
	// HandoffBrokenChain: reason "broken-chain": a chain element, link, continuity or
	// timing check failed (section 5.5, checks 1 to 4).
	HandoffBrokenChain Code = "handoff_broken_chain"
	// HandoffCycle: reason "cycle": an agent appears twice in the chain (section 5.5, 6).
	HandoffCycle Code = "handoff_cycle"
	// HandoffTooDeep: reason "too-deep": the chain is longer than the maximum.
	HandoffTooDeep Code = "handoff_too_deep"
	// HandoffUnverifiableRef: reason "unverifiable-ref": a required reference could not
	// be checked.
	HandoffUnverifiableRef Code = "handoff_unverifiable_ref"
	// HandoffRefMismatch: reason "ref-mismatch": a required reference did not match.
	HandoffRefMismatch Code = "handoff_ref_mismatch"
	// HandoffPolicy: reason "policy": local policy refused (dialog, chain policy, size).
	HandoffPolicy Code = "handoff_policy"

	// HandoffRetransmission: an exact copy of a remembered offer; it is answered as in
	// section 5.3 and never processed again.
	HandoffRetransmission Code = "handoff_retransmission"
	// HandoffGrantMismatch: the credential that arrived with the hop is not the one the
	// offer's grant names, or grant cannot be checked (section 5.7).
	HandoffGrantMismatch Code = "handoff_grant_mismatch"
	// HandoffSenderNotIssuer: the host protocol authenticated the sender of the
	// message that carries an offer as another party than the offer's iss; the copy
	// binds nothing (sections 5.2, 8.4).
	HandoffSenderNotIssuer Code = "handoff_sender_not_issuer"
	// HandoffOfferMismatch: a status names an offer (hop, digest) this party did not
	// send or receive (section 5.6).
	HandoffOfferMismatch Code = "handoff_offer_mismatch"
	// HandoffUnresolvedWork: a new offer for work whose earlier hop is unresolved
	// (section 5.3).
	HandoffUnresolvedWork Code = "handoff_unresolved_work"
	// HandoffInvalidTransition: a status the lifecycle forbids at this point (section 4),
	// such as "rejected" for a hop already taken.
	HandoffInvalidTransition Code = "handoff_invalid_transition"
	// HandoffUnplaced: a request carries a handoff or a status under a handoff key in a
	// place of the host protocol's message that this receiver does not read (another
	// host protocol or version, another method, a second copy): refused rather than let
	// through unchecked (section 6).
	HandoffUnplaced Code = "handoff_unplaced"
	// MCPHeaderMismatch: an MCP request's Mcp-Method or Mcp-Name field is not what its
	// body says (the JSON-RPC method; params.name or params.uri), is sent twice, or is
	// missing where protocol 2026-07-28 requires it; or its MCP-Protocol-Version is not
	// the version the body's _meta names (MCP 2026-07-28 Streamable HTTP, SEP-2243, -32020
	// HeaderMismatch). HTTP 400.
	MCPHeaderMismatch Code = "mcp_header_mismatch"
)

// Codes for dialogs (package dialog; dialog-binding-wimse-oauth). Documented in docs/errors.md.
const (
	// InvalidDialogContext: the Dialog-Context field is malformed, not canonical, or
	// lacks dlg or initiator (dialog-binding sections 4, 7).
	InvalidDialogContext Code = "invalid_dialog_context"
	// DialogInUse: the proposed dialog identifier is held by another initiator (section 5).
	DialogInUse Code = "dialog_in_use"
	// InitiatorMismatch: the initiator named in Dialog-Context is not the workload that
	// proved the request (when establishing), not the dialog's recorded initiator, or not
	// the origin of the provenance chain (sections 5, 9, 12).
	InitiatorMismatch Code = "initiator_mismatch"
	// InvalidProvenance: the experimental Dialog-Provenance field or one of its records
	// is malformed (section 9).
	InvalidProvenance Code = "invalid_provenance"
	// ProvenanceBroken: a provenance record was removed, reordered or inserted.
	ProvenanceBroken Code = "provenance_broken"
	// ProvenanceDialogMismatch: a provenance record was made for another Dialog-Context.
	ProvenanceDialogMismatch Code = "provenance_dialog_mismatch"
	// ResponseNotSignable: a signed response is required, by the client
	// (wimse-sign-response) or by the server's signing policy, and the server cannot
	// sign this one, such as a body over the bound (http-signature-07 section 3.5).
	ResponseNotSignable Code = "response_not_signable"
	// DialogContextMismatch: a signed response echoes a Dialog-Context other than the
	// request's (section 7), or the accepted context differs from the proposed one (5).
	DialogContextMismatch Code = "dialog_context_mismatch"
	// ResponseSignerMismatch: a response's signature verifies, but its signer is not a
	// workload the request was for (agent.Signers: by default the requester's own
	// trust domain, or the peer's on a linked dialog; sections 5 and 11).
	ResponseSignerMismatch Code = "response_signer_mismatch"
	// TooManyDialogs: the sender already holds as many live dialogs at this participant
	// as it may (dialog.WithMaxDialogsPerSender); it establishes no more until some
	// expire (section 5). HTTP 429.
	TooManyDialogs Code = "too_many_dialogs"
	// SessionOwnerMismatch: a request names a host protocol session (an MCP
	// Mcp-Session-Id) or task (an A2A task id) that another workload opened; it is used
	// only by the workload whose proof opened it. HTTP 403.
	SessionOwnerMismatch Code = "session_owner_mismatch"
)

// Codes for the Transaction Token Service (package tts, issue 4; oauth.md section 1).
// Each is documented in docs/errors.md; the token endpoint sends them as the
// "code" member next to the RFC 6749 "error".
const (
	// UnsupportedGrantType: grant_type is not token exchange (RFC 6749 section 5.2).
	UnsupportedGrantType Code = "unsupported_grant_type"
	// UnsupportedTokenType: a requested_token_type or subject_token_type this TTS does
	// not issue or accept (refresh tokens are always refused, oauth.md 1.4).
	UnsupportedTokenType Code = "unsupported_token_type"
	// AudienceNotServed: audience names no trust domain this TTS serves (oauth.md 1.11).
	AudienceNotServed Code = "audience_not_served"
	// ScopeTooBroad: the requested scope is broader than the subject token's, the input
	// Txn-Token's, or what policy lets the workload request (oauth.md 1.5 step 4, 1.8).
	ScopeTooBroad Code = "scope_too_broad"
	// ScopeUnknown: the scope tied to the subject token cannot be determined, so nothing
	// can be granted (oauth.md 1.5 step 4, TT section 13.14).
	ScopeUnknown Code = "scope_unknown"
	// WorkloadNotAllowed: policy does not let the authenticated workload make this
	// request (this audience, subject token type or context).
	WorkloadNotAllowed Code = "workload_not_allowed"
	// ImmutableClaimChanged: a replacement would change txn, sub, aud, or a tctx or
	// rctx member of the input Txn-Token (oauth.md 1.8).
	ImmutableClaimChanged Code = "immutable_claim_changed"
	// ReplacementLimitReached: the call chain of a replaced Txn-Token is at its
	// configured maximum length (oauth.md 1.8).
	ReplacementLimitReached Code = "replacement_limit_reached"
	// TxnTokenNotCredential: a Txn-Token was presented as a credential (oauth.md 1.9
	// item 4: it never authenticates anyone).
	TxnTokenNotCredential Code = "txn_token_not_credential"
	// DialogMismatch: tctx.dlg of a Txn-Token is absent or not the dialog of the request
	// (dialog-binding sections 10 and 12 step 3).
	DialogMismatch Code = "dialog_mismatch"
	// TTSUnavailable: a TTS could not be reached or gave no usable answer (Incomplete).
	TTSUnavailable Code = "tts_unavailable"
)

// Codes for identity chaining (package chaining, issue 5; oauth.md section 2,
// dialog-binding section 11). Each is documented in docs/errors.md.
const (
	// UnknownPeer: the audience or resource of a grant request names no peer
	// authorization server this AS issues grants for (RFC 8693 invalid_target).
	UnknownPeer Code = "unknown_peer"
	// GrantBindingMismatch: a grant's requested_cnf.jkt (RFC 7523 invalid_grant), or an
	// access token's cnf.jkt, is absent or is not the thumbprint of the WIT key of the
	// workload presenting it.
	GrantBindingMismatch Code = "grant_binding_mismatch"
	// SubjectNotMapped: the subject policy for the peer has no mapping for the subject
	// (AS A: invalid_request; AS B: invalid_grant, "MUST deny if the subject cannot be
	// identified", oauth.md 2.4).
	SubjectNotMapped Code = "subject_not_mapped"
	// ASUnavailable: an authorization server (AS A or AS B) could not be reached or gave
	// no usable answer (client side; Incomplete).
	ASUnavailable Code = "as_unavailable"
	// TokenRefused: a token endpoint refused the request with a plain RFC 6749 error (or
	// an HTTP 4xx without an error document) and no dialogtrust code: another vendor's
	// authorization server. Its error and error_description are in the detail (client
	// side).
	TokenRefused Code = "token_refused"
	// CrossesTrustBoundary: a request of a linked dialog would carry the original
	// domain's Txn-Token, dialog identifier or provenance across the trust boundary
	// (dialog-binding sections 11 and 13, domain separation).
	CrossesTrustBoundary Code = "crosses_trust_boundary"
)

// Codes for the proxy (package proxy, issue 15). Each is documented in docs/proxy.md.
const (
	// NoRoute: the egress proxy has no route for the request's path, or the path is not
	// in normal form (a dot segment could leave the route's upstream path); at a
	// receiver publishing protected resource metadata, a path under its well-known
	// prefix that is not the metadata's (dialog.ResourceMetadataHandler). HTTP 404.
	NoRoute Code = "no_route"
	// UpstreamUnavailable: the upstream (the called agent behind an egress route, or
	// the application behind the ingress) could not be reached or gave no usable answer,
	// such as a response over the proxy's bound (Incomplete).
	UpstreamUnavailable Code = "upstream_unavailable"
	// HostNotAllowed: the egress proxy's caller named a Host the egress does not
	// answer as (issue 22 point 6): a name rebound to the loopback address by a web
	// page (DNS rebinding). HTTP 421.
	HostNotAllowed Code = "host_not_allowed"
	// OriginNotAllowed: a browser sent the request to the egress proxy from an origin
	// it does not allow, or without an Origin to tell (issue 22 point 6, CSRF). HTTP
	// 403.
	OriginNotAllowed Code = "origin_not_allowed"
	// PKCS11Unavailable: a PKCS#11 token could not be used: its module could not be
	// loaded, no token is in the configured slot or has the configured label, the token
	// did not answer, or the binary was built without cgo (issue 27). Incomplete.
	PKCS11Unavailable Code = "pkcs11_unavailable"
	// PKCS11LoginFailed: the token refused the configured PIN, or the PIN is locked
	// (issue 27).
	PKCS11LoginFailed Code = "pkcs11_login_failed"
)

// Codes of authorization at receivers, ingresses and the TTS (package authz, issue 25).
const (
	// NotAuthorized: a decision point (a CEL allow condition, an AuthZEN policy decision
	// point) did not allow a verified request. HTTP 403; nothing reaches the application.
	NotAuthorized Code = "not_authorized"
	// DecisionUnavailable: the authorization decision could not be made: a condition that
	// could not be evaluated within its bounds, or a policy decision point that did not
	// answer (Incomplete, HTTP 503). Fail closed: nothing reaches the application.
	DecisionUnavailable Code = "decision_unavailable"
)

// Codes of revocation (package revoke, issue 26): an operator revoked what a request or a
// token request is in. HTTP 403; nothing reaches the application and no token is issued.
const (
	// DialogRevoked: the dialog (or the dialog it was linked from, where the link is
	// known) is revoked.
	DialogRevoked Code = "dialog_revoked"
	// WorkloadRevoked: the sending or requesting workload is revoked.
	WorkloadRevoked Code = "workload_revoked"
	// TxnRevoked: the transaction (the Txn-Token's txn) is revoked.
	TxnRevoked Code = "txn_revoked"
)

// Codes of the operator's page (package console, issue 26).
const (
	// LoginCodeInvalid: the page's one-time login code is unknown, was used already, or
	// expired. HTTP 401; ask for a new link.
	LoginCodeInvalid Code = "login_code_invalid"
	// CSRFTokenInvalid: a form post of the page without its session's token, or with
	// another. HTTP 403; nothing is changed.
	CSRFTokenInvalid Code = "csrf_token_invalid"
)

// Codes for conditions (package condition, issue 25): an operator's CEL expression
// that could not be evaluated. The rule refuses; it never allows what it cannot decide.
const (
	// ConditionError: a condition's evaluation ended in an error (a missing map key,
	// a value of the wrong type, an overflow), or its result is not of the needed type.
	ConditionError Code = "condition_error"
	// ConditionNotEvaluated: a condition's evaluation was stopped by its cost limit or
	// its evaluation deadline (Incomplete).
	ConditionNotEvaluated Code = "condition_not_evaluated"
)
