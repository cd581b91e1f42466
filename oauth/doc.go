// Package oauth is the OAuth token endpoint layer shared by the Transaction Token
// Service and the identity-chaining authorization servers, in the style of ory/fosite:
// one handler per grant behind one token endpoint.
//
// Read endpoint.go first (Endpoint and Handler: one token endpoint, one handler per
// grant), then request.go (TokenRequest), auth.go and privatekeyjwt.go (client
// authentication), response.go and errors.go (the answers). client.go is the client
// side (TokenClient).
//
//   - Names: grant types, token types, error codes and the client assertion type of
//     RFC 6749, RFC 7523 and RFC 8693, and the names of dialogtrust's grant handlers.
//   - The token request (RFC 6749 section 3.2 and Appendix B; RFC 8693 section 2.1;
//     RFC 7523 section 2.1; oauth.md 1.3): ParseTokenRequest is the one strict form
//     parser: a bounded body, a bound per parameter, UTF-8 text, a parameter given twice
//     refused, unknown parameters ignored. Each grant applies its own rules to the
//     parsed request (CheckBounds, Has, DecodeContext for the TTS's request_context
//     and request_details, oauth.md 1.3).
//   - The Endpoint (RFC 6749 section 3.2): an http.Handler that reads the body once,
//     parses it once and dispatches to the first Handler whose Match accepts the
//     request (grant_type, requested_token_type, audience, resource), else to its
//     fallback. It runs the handler's steps in one order: Check (the grant's own
//     parameter rules, cheap and stateless, so a malformed request reaches no
//     signature verification and no replay store), then client authentication, once,
//     as the handler's ClientAuth says (RFC 6749 section 3.2.1; no grant here may skip
//     it: NewEndpoint refuses a handler without it), then Handle with the
//     authenticated Client. It writes the handler's Response (RFC 6749 section 5.1,
//     RFC 8693 section 2.2.1, no-store) or the error document, and tells an Observer
//     every outcome (oauthmetrics counts them for Prometheus; this package does not
//     import it). An Auditor (audit.go; package audit) records every outcome before
//     it is sent, and an issuance it cannot record becomes a refusal
//     (audit_unavailable). Read endpoint.go first, then clientauth.go.
//   - Errors (RFC 6749 section 5.2, RFC 8693 section 2.2.2, RFC 7523 section 3.1,
//     oauth.md 1.11): ErrorFor is the one mapping from a rejection (its errcode and
//     the Stage it failed at) to the OAuth error and HTTP status; WriteError writes the
//     document with dialogtrust's stable code and kind, a sanitized description of at
//     most 512 octets, WWW-Authenticate on a 401 and Retry-After on a 503.
//   - Client authentication (RFC 6749 section 2.3, oauth.md 1.9): a grant's ClientAuth
//     lists its Authenticators, chosen by method name (ByName: wit_httpsig, wit_wpt,
//     tls_client_auth, private_key_jwt), the first whose credential is present
//     deciding and a present but bad one final (FirstPresent): a WIT with a WIMSE
//     HTTP signature or a WPT, TLS client authentication with a workload certificate
//     (RFC 8705), and private_key_jwt (RFC 7521 section 4.2, RFC 7523 sections 2.2
//     and 3; PrivateKeyJWT verifies, NewClientAssertion mints), which the WIT issuer
//     uses too. A Txn-Token is never a credential (txn_token_not_credential, oauth.md
//     1.9 item 4; the TTS's ClientAuth.Refused says so).
//   - The RFC 8414 section 3 metadata document (Metadata, ServeMetadata; oauth.md 5.2),
//     the token response (TokenResponse, written without reflection) and the error
//     response (ErrorResponse).
//   - The client side: TokenClient is a workload's side of a token endpoint (a token
//     request proved with its WIT, the answer or error read back) and Discover reads
//     RFC 8414 metadata (sections 3.1, 3.3).
package oauth
