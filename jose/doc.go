// Package jose is the one typed-token verification path of dialogtrust: every JWT of
// every kind (WIT, WPT, Txn-Token, authorization grant, access token, handoff) is signed
// by Sign and checked by Verify.
//
// Read jose.go first (Sign, Parse, Verify and the header rules), then claims.go (the
// registered claims and their time checks).
//
// Verify applies, in this order, and stops at the first failure:
//  1. size bound, then the compact form: three non-empty base64url segments without
//     padding (malformed_token, token_too_long, invalid_encoding);
//  2. explicit typing (RFC 8725 section 3.11): typ must name the expected type,
//     compared case-insensitively, with or without "application/" (wrong_type). The typ
//     check comes first so that a mistyped token is reported as such whatever else is
//     wrong with it (the WIMSE vectors rely on that);
//  3. no "crit" (unsupported_critical); no header that could choose a key: jku, x5u,
//     jwk, x5c (forbidden_header). Duplicate header members are invalid_encoding;
//  4. alg: never "none", never a MAC or encryption algorithm, only the allow-list
//     (unsupported_alg), whose entries name algorithms, not spellings: "EdDSA" and
//     "Ed25519" (RFC 9864 section 2) each admit both; RS256 and PS256 only with Options.RSA (an identity provider's
//     tokens, keys from a keys.RSAPolicy set);
//  5. the key is chosen by kid only from trust configuration (a keys.KeySet), never from
//     the token; the key's one algorithm must be the token's alg (unsupported_alg);
//  6. the signature (invalid_signature).
//
// Claims are decoded by the caller; CheckTimes applies exp, nbf and iat with a configured
// skew and an injected clock. RegisteredClaims is the one declaration of iss, sub, aud
// and the three times (RFC 7519 section 4.1) that claims types embed.
//
// Why not jwx's jws/jwt for this: the WIMSE conformance vectors must be re-issued byte for
// byte (header member order typ, alg, kid; claims in the order given), which jwx's sorted
// serialization cannot produce; and the WIT-plus-proof verify path must stay within 1.3x
// of the raw signature verifications, which jwt.Parse (1.25x-1.5x alone) cannot. jwx
// still does all JWK work (package keys). This is the one place compact JWS is handled.
package jose
