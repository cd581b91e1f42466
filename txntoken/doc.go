// Package txntoken is the OAuth Transaction Token as a credential: its claims, the
// Txn-Token field that carries it, and the verifier a receiver runs on it
// (draft-ietf-oauth-transaction-tokens, built to the editor's copy with -08 peers
// accepted where that is free; shared/specs/oauth.md section 1). The service that
// issues Txn-Tokens is package tts; this package knows nothing of it, so a workload that
// only verifies Txn-Tokens links no router, no metrics library and no Redis client.
//
// Read txntoken.go first (Claims), then verifier.go (Verifier, the receiver's checks)
// and client.go (asking a TTS).
//
// # Format (oauth.md 1.7)
//
// A Txn-Token is a JWS with typ txntoken+jwt (Type; the application/ prefix and any case
// are accepted) and a kid. Claims holds its claims in the order the TTS writes them:
// iss, iat, exp, aud (one trust domain, written as one string), txn, sub, scope, req_wl
// (one requester), req_chain (every requester of a replaced token, oldest first), ext
// (the count of lifetime-extending replacements), tctx and rctx. Claims.MarshalJSON
// writes encoding/json's document without reflection (fuzz tests hold the two equal);
// CallChain also reads a -08 comma-separated req_wl.
//
// # Receiver validation (oauth.md 1.10)
//
// Verifier checks, first failure wins: the size bound; typ; alg on the allow-list, never
// none or a MAC, and the one algorithm of the key; the JWS signature with the key the
// TTS's key set names by kid (a keys.RemoteSet refetches its JWKS on an unknown kid,
// rate limited), never a key from the token; the REQUIRED claims iat, exp, aud, txn,
// sub, scope and req_wl present; aud exactly one trust domain, and the receiver's (item
// 2 b); exp not passed, iat not in the future and the lifetime within the bound, with
// the clock and skew injected (item 2 c); iss when WithIssuer names the TTS.
// VerifyRequest also requires the Txn-Token field (HeaderName) to occur exactly once
// and hold one token (item 1). Numbers in tctx and rctx come back as json.Number,
// exactly as the TTS wrote them. Every rejection is an *errcode.Error; one that could
// not be completed (no keys) says so by its kind.
//
// # Dialog binding (dialog-binding section 10)
//
// The TTS records the dialog a token was issued for in tctx.dlg (DialogMember).
// DialogMatches compares it, exactly, with the dialog identifier of a request
// (dialog-binding section 12 step 3): a token recorded for another dialog, or for none,
// is dialog_mismatch. The dialog identifier is an opaque string here: package dialog
// parses Dialog-Context and owns its meaning.
//
// Nothing here logs a token; where one must be named, it is by Hash,
// base64url(SHA-256(token)) (oauth.md 1.12).
package txntoken
