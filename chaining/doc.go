// Package chaining is identity and authorization chaining across trust domains
// (draft-ietf-oauth-identity-chaining-17, RFC 8693, RFC 7523, RFC 9068; digested in
// shared/specs/oauth.md sections 2-5) as dialog-binding-wimse-oauth section 11 uses it:
// at a trust boundary a participant starts a linked dialog, and authorization moves to
// the other domain through a JWT authorization grant, so that neither the dialog
// identifier nor the Txn-Token of the original domain crosses (section 13, domain
// separation).
//
// Read mux.go first (how the two grants sit behind one oauth.Endpoint), then grant.go
// (AS A: GrantIssuer issues the JWT authorization grant) and bearer.go (AS B: JWTBearer
// redeems it for an access token); client.go is the participant's side of both
// exchanges, claims.go and decode.go the tokens' claims, request.go the two token
// requests, verifier.go the access token at the receiver.
//
// # Figure 5
//
//	A2 (domain A)                AS A (TTS A binary)        AS B (TTS B binary)     B1, TTS B
//	 1. token exchange: subject_token = Txn-Token of D1 (domain A), audience = AS B
//	    ------------------------------------------------> GrantIssuer
//	    <------ grant: typ txn-chain+jwt, aud AS B, requested_cnf = A2's WIT key
//	 2. jwt-bearer: assertion = grant, WIT + proof of A2
//	    ---------------------------------------------------------------> JWTBearer
//	    <------ access token: typ at+jwt, aud b.example, cnf = A2's WIT key, 5 minutes
//	 3. Dialog-Context proposing D2 (initiator A2), Authorization: Bearer <at>, signed
//	    --------------------------------------------------------------------------> B1
//	 4. B1: subject_token = the access token, request_details.dlg = D2 ---------> TTS B
//
// agent.Linker drives steps 1-3 for A2 and agent.LinkAcceptor step 4 for B1.
//
// # Handlers (one per grant, fosite style) and the one token endpoint
//
// GrantIssuer (AS A) answers a token exchange for a JWT authorization grant; JWTBearer
// (AS B) answers the RFC 7523 jwt-bearer grant with an access token. Both run in the
// TTS binary as oauth.Handlers of its one token endpoint (tts.Config.Grants, Handlers),
// which reads and parses the body once and routes by grant_type and
// requested_token_type (txn_token: the TTS; ...:jwt, or no requested_token_type with an
// audience or resource naming a peer: AS A; jwt-bearer: AS B; see Match). Each applies
// its own parameter rules to the one parsed request (bounds of every parameter,
// refused actor_token for AS A). AmendMetadata (and MetadataFunc) add the jwt-bearer
// grant type, the issued token types and
// identity_chaining_requested_token_types_supported to the TTS's RFC 8414 metadata.
// Each checks its parameters (Check) before the endpoint authenticates the requesting
// workload, once, with the methods the handler's ClientAuth lists (the WIT methods of
// package oauth, oauth.WIMSEAuthenticators: a WIT with a WIMSE HTTP signature or a
// WPT); Handle then requires a WIT and a matching client_id (boundClient), because the
// grant and the access token are bound to its key: neither handler serves a client
// without authentication, although RFC 7523 section 3.1 would allow it at AS B. Their
// outcomes are counted by the endpoint's oauth.Observer (oauthmetrics); this package
// does not import Prometheus.
//
// # The grant (AS A)
//
// Header {"typ":"txn-chain+jwt","alg","kid"}: the typ of the Txn-Token-JAG of
// draft-fletcher-oauth-txn-token-chaining-profile-00 (section 6.1.1), the profile of
// identity chaining with a Txn-Token as subject token; identity chaining itself leaves
// typing open (oauth.md 2.3, Q10), and explicit typing keeps the grant from being taken
// for any other JWT the same key signs (a Txn-Token, an access token). Where this
// package differs from that profile, and why, is fletcher.go's. Claims: iss (AS A), sub
// (the Txn-Token's, transcribed by the peer's SubjectMap), aud (AS B's issuer, one
// string, oauth.md 4.3), iat, exp (60 s by default, at most 5 minutes, never after the
// Txn-Token's exp), jti (128 random bits), scope (never broader than the Txn-Token's, nor
// than the peer's allowed scopes; a wider request is invalid_scope, never trimmed), and
// requested_cnf {"jkt": RFC 7638 thumbprint of the requester's WIT key} (the draft's
// Appendix B.3 idea), so that AS B redeems the grant only for that workload. The grant
// never carries tctx, tctx.dlg, txn, or the Txn-Token or its hash: that is domain
// separation by construction, and the Figure 5 test checks every request that reaches
// domain B for it. AS A also requires the requester to be a workload of the Txn-Token's
// trust domain (oauth.md 2.2 item 5: no lateral movement). The response is RFC 8693's:
// access_token = the grant, issued_token_type ...:jwt, token_type N_A, expires_in.
//
// # The access token (AS B)
//
// JWTBearer validates the grant per oauth.md 4.2 through package jose, the one
// typed-token path: iss a configured peer (else untrusted_issuer), typ one of the
// peer's (default exactly txn-chain+jwt; no typ only where the peer allows
// untyped grants, else wrong_type), alg on the allow-list (RS256 and PS256 only from a
// peer opened to RSA, BearerPeer.RSA with a keys.RSAPolicy key set, else
// unsupported_alg), the key by kid from the peer's configured keys only (a JWKS file or
// URL, or the peer's RFC 8414 metadata: NewDiscoveredKeys), the signature, sub present,
// aud naming AS B's issuer identifier or its token endpoint URL, or one of the peer's
// audiences (exact), exp required and at most 5 minutes
// ahead, nbf, iat not in the future, jti present, requested_cnf.jkt equal to the
// thumbprint of the authenticated client's WIT key (grant_binding_mismatch). Then the
// client policy, scope (the grant's intersected with the peer's allowed scopes; a
// request asks within that; empty is invalid_scope), the subject mapping (none:
// subject_not_mapped), and last the jti is claimed once in the replay store until exp
// plus skew (replayed), so that nothing unauthenticated or invalid writes to the store;
// a store that does not answer is 503 temporarily_unavailable, kind could_not_complete.
// Every grant failure is invalid_grant (RFC 7523 section 3.1) with dialogtrust's stable
// code as an extra member.
//
// The access token is RFC 9068: header typ at+jwt and kid; claims iss (AS B), sub,
// aud (the domain's resource audience, e.g. its trust domain), client_id (the client
// workload), scope, iat, exp (5 minutes by default), jti, and cnf {"jkt"} binding it to
// the client's WIT key: a resource server that verified the request's WIMSE proof checks
// it with CheckHolder. No refresh token, ever (oauth.md 2.4 item 6).
//
// The TTS of domain B accepts these access tokens as subject tokens through its
// ordinary tts.JWTHandler (issuer AS B, keys RingKeySet of its own ring, typ at+jwt,
// audience checked) and records the linked dialog from request_details.dlg; it needs
// nothing from this package.
//
// # Keys
//
// AS A signs grants, and AS B access tokens, with the TTS's key ring, published at the
// TTS's JWKS and named by its metadata. One key thus signs Txn-Tokens, grants and
// access tokens; each is typed explicitly and every verifier requires its one typ, so
// none can stand in for another.
//
// # ID-JAG
//
// The Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant,
// docs/interop.md says which text) is the same two steps with the draft's grant: AS A
// issues one on requested_token_type ...:id-jag, from a Txn-Token (the Fletcher
// profile) or an ID token of a configured identity provider (idjag.go); AS B redeems
// one from a peer whose typs include oauth-id-jag+jwt, with the draft's checks
// (aud exactly its issuer, client_id the authenticated client, resource, cnf;
// bearer_idjag.go). Client.IDJAG asks for one (idjagclient.go), and Client.Credential
// lets the client authenticate to servers outside WIMSE (an enterprise IdP, an MCP
// server's authorization server).
//
// Errors follow RFC 6749 section 5.2, RFC 8693 section 2.2.2 and RFC 7523 section 3.1
// (oauth.ErrorFor, the one mapping of the token endpoint), written by the endpoint. Nothing here logs a whole token: tokens appear as base64url SHA-256.
package chaining
