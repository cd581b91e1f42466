// Package keys holds signing and verification keys and the trust configuration that says
// which keys speak for which issuer or trust domain.
//
// Read key.go first (PublicKey, PrivateKey), then set.go (KeySet, StaticSet and Trust:
// which keys speak for whom) and alg.go and pin.go (one algorithm per key). ring.go,
// rotation.go and shared.go are a service's own signing keys (Ring, Rotator), remote.go
// and lazy.go keys fetched from a JWKS URL, keyfile.go and rsa.go keys read from files.
//
// Rules it enforces (wimse.md 2.1, 2.4 WIT-1; workload-creds-02 section 3):
//   - every key is pinned to exactly one JWS algorithm: ES256 (P-256) or Ed25519, the
//     latter under either name "EdDSA" or "Ed25519" (RFC 9864); "none", MAC and
//     encryption algorithms, and an "alg" that does not fit the key's type, are refused.
//     A key from trust configuration (ParseJWKS, LoadJWKSFile, RemoteSet,
//     ParsePublicJWK) without "alg" is pinned to the one algorithm its type admits:
//     EC P-256 to ES256, OKP Ed25519 to EdDSA, RSA (only in a set opened to RSA) to the
//     RSAPolicy's DefaultAlg; pin.go is the one place that decides. A cnf.jwk
//     (ParseConfirmationJWK) and a private signing key (ParsePrivateJWK) must still
//     carry "alg" (workload-creds-02 section 5.1).
//   - the kid of a generated key is its RFC 7638 thumbprint (SHA-256, base64url); a loaded
//     key keeps the kid it has (drafts' examples use kids such as "June 5").
//   - keys come only from trust configuration (a JWKS file, a JWKS URL configured out of
//     band, or an inline set), never from a token's jku, x5u, jwk or iss.
//   - a Ring holds a signer's active key plus published keys, so rotation publishes a
//     key before it is used and keeps the old one while tokens it signed can be valid.
//     A Rotator drives a Ring for the wit-issuer and the TTS alike (oauth.md 1.12,
//     workload-creds-02 section 3): a new key is in the JWKS for PublishDelay (longer
//     than the JWKS cache age) before it signs, a replaced key stays for Retain (the
//     longest token lifetime plus skew), and its RingState is saved before a new key
//     signs, so a restart resumes where it stopped. OpenRotator opens one from the
//     services' keys.signing_key_file or keys.data_dir (a 0600 file in a 0700
//     directory, written atomically). NewSharedRotator keeps the RingState in a
//     RingBackend shared by a service's replicas (store/redisstore.KeyRing), versioned
//     so that concurrent steps never overwrite each other; keys/ringtest is the
//     contract every backend passes.
//   - RSA keys (RS256, PS256, 2048 to 8192 bits) exist only in sets read with an
//     RSAPolicy (ParseJWKSWithRSA, WithRSA): the JWKS of identity providers whose tokens
//     the TTS takes as subject tokens. Every other set refuses them and CheckSignatureAlg
//     names ES256 and EdDSA only, so no WIMSE credential can be RSA.
//   - NewLazyRemoteSet is a RemoteSet for a JWKS that may not answer yet (services
//     started in any order): keys_unavailable until it does.
//
// JWK parsing, thumbprints, JWKS serialization and the JWKS HTTP cache are jwx's
// (github.com/lestrrat-go/jwx/v2). Signing and verification are crypto/ecdsa and
// crypto/ed25519 directly: ES256 signs deterministically (RFC 6979) so that the
// conformance vectors can be reproduced byte for byte, and the hot verify path carries no
// per-call allocation of library machinery.
package keys
