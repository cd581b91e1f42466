// Package pkcs11 keeps a service's signing keys in a PKCS#11 token (an HSM, or
// SoftHSM2): the WIT issuer's and the TTS's rotated keys (Token is a keys.KeyStore, for
// keys.NewStoreRotator) and a fixed key by label (Token.Key, the proxy's own keys). The
// private keys are generated in the token as sensitive, non-extractable objects and
// never leave it: signing is the token's (keys.NewExternalKey), and the JWKS is built
// from the public halves the token returns.
//
// Read config.go first (Config, and the error codes pkcs11_unavailable and
// pkcs11_login_failed), then token.go (Open, the key objects and their CKA_ID).
//
// The PKCS#11 library is github.com/ThalesGroup/crypto11 over github.com/miekg/pkcs11,
// which needs cgo (the module is loaded with dlopen). Built without cgo (CGO_ENABLED=0,
// as the images of deploy/ are), Open refuses with pkcs11_unavailable, so that a
// configuration that names a token fails at start and never falls back to keys in
// memory. crypto11 v1.6.2 has no Ed25519 (CKM_EDDSA): keys in a token are ES256 only.
//
// Rules it enforces (oauth.md 1.12, workload-creds-02 section 3, through
// keys.NewStoreRotator): a key of the next generation is created in the token and
// published by every replica that lists the token before any signs with it; what the
// replicas agree on is derived from the key objects alone (each CKA_ID records the
// key's generation and creation time), since the token has no compare-and-swap.
package pkcs11
