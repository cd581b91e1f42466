// Package tts is the Transaction Token Service of a trust domain and its receiver
// library (draft-ietf-oauth-transaction-tokens, built to the editor's copy with -08
// peers accepted where that is free; shared/specs/oauth.md section 1, whose section
// numbers name the tests), with the dialog binding of dialog-binding sections 10 and 12.
//
// Read server.go first (Config, New: the service and its token endpoint), then grant.go
// (the token exchange handler), issue.go (minting and replacement), subject.go (subject
// token handlers), policy.go (Policy, Rule) and policy_cel.go (a rule's CEL conditions,
// docs/tts.md "Conditions"; policytest.go has Policy.Decide, what dialogtrust policy
// test runs).
//
// # Server (the token endpoint)
//
// POST /token is the RFC 8693 profile of oauth.md 1.3: grant_type token-exchange,
// requested_token_type txn_token, audience = a trust domain this TTS serves, scope,
// subject_token and subject_token_type, request_context and request_details as plain
// JSON text. The token endpoint (oauth.Endpoint) reads and parses the body once; a
// request for a Txn-Token, and every request no other grant handler serves, runs
// through these steps, first failure wins (txnGrant's Check, the endpoint's client
// authentication as txnGrant's ClientAuth says, then txnGrant.Handle):
//
//  1. Content-Type, body bound, form syntax: a parameter given twice, actor_token and
//     resource are refused; then the REQUIRED parameters, grant_type
//     (unsupported_grant_type) and requested_token_type. Cheap and stateless, so they
//     come before any signature is verified.
//  2. Client authentication (oauth.md 1.9). A Txn-Token offered as a credential
//     (Authorization, WIT field, client_assertion, or a bare Txn-Token field) is refused
//     with txn_token_not_credential (1.9 item 4). Then the first oauth.Authenticator
//     whose credential is present decides: WIT + WIMSE HTTP signature (covering
//     Content-Digest, so the form is signed), WIT + WPT, mTLS with an X.509-SVID, or
//     private_key_jwt (typ client-authentication+jwt, jti claimed once). A present but
//     bad credential is invalid_client, never a fall-through to another method. The
//     WPT jti and the signature nonce are claimed in the replay store only after the
//     signature verified.
//  3. Policy (oauth.md 1.5 step 1): the rule for the workload (exact, else longest
//     prefix; none: unauthorized_client), the audience (not served: invalid_target; not
//     the workload's: unauthorized_client), the subject token type.
//  4. The subject token, by its handler (one per type, in the style of fosite): JWT
//     access and ID tokens of configured issuers (keys by JWKS, typ explicit; RS256 and
//     PS256 for an issuer opened to RSA, JWTIssuer.RSA),
//     self_signed (iss = the authenticated workload, signed with a key it proved in this
//     request, aud = this TTS), unsigned_json (only where policy lists it), txn_token
//     (replacement). Refresh tokens and unknown types: unsupported_token_type.
//  5. Scope (1.5 step 4): every requested scope token must be within the subject's
//     scope and the rule's; a subject whose scope cannot be determined is refused
//     (scope_unknown), never treated as unconstrained. tctx from request_details (dlg
//     always; other members as the rule allows), rctx from request_context (members the
//     rule allows: req_ip only from the gateway, 1.5 step 8). exp = now + lifetime,
//     capped at the subject token's exp unless policy allows more (step 10).
//  6. Claims (1.7) iss, iat, exp, aud (one trust domain), txn (128 random bits), sub,
//     scope, req_wl, tctx, rctx; header typ txntoken+jwt and kid; signed with the
//     ring's active key. Response (1.6): access_token, issued_token_type, token_type
//     N_A, expires_in, scope; Cache-Control: no-store and Pragma: no-cache.
//
// Errors follow RFC 6749 section 5.2 with the mapping of oauth.md 1.11 (oauth.ErrorFor), and
// carry dialogtrust's stable code and kind as extra members. A check that could not be
// completed (JWKS or store unreachable) is temporarily_unavailable with status 503 and
// kind could_not_complete, never an acceptance.
//
// # Replacement (oauth.md 1.8)
//
// A Txn-Token as subject token is verified with the TTS's own keys (not expired, aud a
// served trust domain) and replaced: txn, sub and aud are copied (an audience other
// than the input's is immutable_claim_changed); scope only narrows; tctx and rctx
// members are kept and may be added to, never changed (tctx.dlg: dialog_mismatch); the
// Call Chain is kept in req_chain (every requester, oldest first), so req_wl stays one
// identifier as the editor's copy wants and no requester is lost as -08 wants; a
// replacement may extend the lifetime only while ext, the count of extending
// replacements, is under Policy.MaxLifetimeExtensions; after that it keeps the input's
// exp. checkReplacement re-checks every row on the finished claims.
//
// # Caching, for speed
//
// Issuance with warm caches costs one proof verification and one signature. The WIT
// validator caches validated WITs (wit.WithCache), and the JWT and self_signed handlers
// cache validated subject tokens by their exact text until their exp (bounded, at most
// CacheMaxAge); the time rules run on every use. The rest of a request avoids
// reflection and copies where it can: the plain JSON this project writes (WPT claims,
// request_details, tctx) is read and written directly (read and written by
// internal/plainjson, with encoding/json for anything else and fuzz tests
// holding the two equal), the log line of
// an issued token is written with typed attributes and its hashes computed only when it
// is written, and the router hands POST /token straight to the oauth.Endpoint, which
// parses the body once and dispatches on grant_type. See docs/performance.md, "TTS
// token endpoint benchmark", for the measured figures.
//
// # Receiver library
//
// The Txn-Token as a credential (its claims, the Txn-Token field, the receiver's
// txntoken.Verifier and txntoken.DialogMatches, oauth.md 1.7 and 1.10, dialog-binding
// section 10) is package txntoken, which a receiver imports without this service.
//
// # Client
//
// The client side is not here either: txntoken.Client asks a TTS for tokens
// (txntoken.NewSelfSignedToken mints a self_signed subject token), and oauth.Discover
// reads its RFC 8414 metadata. The token endpoint's request, client authentication,
// errors, response and metadata are package oauth's.
//
// # Keys and discovery
//
// The signing keys are a keys.Ring (publish-before-use rotation by keys.Rotator), published
// at /.well-known/jwks.json; RFC 8414 metadata at /.well-known/oauth-authorization-server
// names the issuer, token endpoint, JWKS, grant type and authentication methods.
// keys.LazyRemoteSet trusts a JWKS URL that may not answer yet (the development default
// starts before its WIT issuer).
//
// Other grant handlers share the token endpoint (Config.Grants; package chaining,
// identity chaining: AS A and AS B in the TTS binary): built before the Server, with
// TxnTokenVerifierFor validating this server's Txn-Tokens for them, they amend the
// metadata with what they serve, and the endpoint writes their RFC 6749 errors with the
// one mapping. The endpoint's outcomes are counted on Config.Registry by
// oauthmetrics (dialogtrust_tts_*, dialogtrust_chaining_*).
//
// Nothing here logs a whole token: tokens appear as base64url(SHA-256) (tokenhash.Of).
package tts
