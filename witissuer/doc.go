// Package witissuer is the Identity Server of a trust domain: it authenticates a
// workload, checks that the workload holds the key it wants certified, applies policy,
// and mints a Workload Identity Token for it (draft-ietf-wimse-workload-creds-02 section
// 5.1; wimse.md sections 1 and 2). It also holds the client side: Client asks an issuer
// for a WIT, and Client.Source keeps one fresh (creds-02 section 9.4).
//
// Read server.go first (Config, New, the routes), then protocol.go (the request and
// response), auth.go (how a workload authenticates), proof.go and policy.go; client.go
// is the client side (Client, Client.Source), tls.go and bundles.go the certificates
// and trust bundles.
//
// Spec sections it implements, and where:
//
//   - creds-02 section 3 and wimse.md WIT-1: the issuer publishes its keys as a JWKS
//     (GET /.well-known/jwks.json) from a keys.Ring; keys.Rotator rotates it publish-before-use:
//     a new key is published, activated only after a publish delay longer than the JWKS
//     cache age, and the old key stays published for the longest WIT lifetime plus skew,
//     so every WIT verifies through the JWKS until it expires.
//   - creds-02 section 5.1 (claims, cnf.jwk with alg) and section 9.4 (WIT-3, fresh key
//     per WIT): the workload proves possession of the key to certify with a request JWS
//     (typ wit-request+jwt) signed by that very key; the issuer verifies it with the key
//     from cnf.jwk and nothing else (proof.go).
//   - creds-02 section 9.2.1 (lifetime limited, short): Policy caps the lifetime; a
//     request for more is refused with lifetime_too_long, never trimmed.
//   - identifier-03 sections 4 and 7 (wimse.md ID-1..ID-8): every identifier is parsed
//     canonically before use; Policy compares whole URIs; prefix rules exist only where
//     configuration says so (ID-5) and must end in "/"; issued subjects must lie in the
//     issuer's own trust domains (ID-6).
//   - creds-02 sections 6.1 and 9.3, mutual-tls-02 section 3 (wimse.md 2.6): the
//     x509svid method verifies the client's X.509-SVID against the trust bundle of the
//     trust domain its URI SAN names (wic.VerifyWithBundles), on every request. On the
//     client side, ClientTLSConfig presents an SVID from files, ClientTLSConfigFromSource
//     one from an x509svid.Source (go-spiffe's workloadapi.X509Source: the SPIFFE
//     Workload API), read at every handshake so that rotations are followed.
//
// Why it is built this way:
//
//   - Proof before authentication, store last. The request JWS is verified first (pure
//     computation), then the route's authentication method runs, then policy, and only
//     then is the request's jti claimed in the replay store, so an unauthenticated
//     caller can never fill the store. The assertion method claims its own jti after its
//     signature verified.
//   - The first method of a route whose credential is present decides. A credential that
//     is present but invalid is a rejection, never a fall-through to a weaker method.
//   - Client certificates are requested, not required, at the TLS layer (the other
//     methods need none), and crypto/tls does not verify them: the x509svid method
//     verifies the chain on every request against the bundles as they are now. That
//     also covers resumed TLS sessions, on which Go skips VerifyPeerCertificate
//     (libraries.md section 3), and long-lived connections after a bundle reload.
//   - Every rejection is an *errcode.Error written with problem.Write; metrics count
//     refusals by code; logs carry a token only as tokenhash.Of, never whole.
//   - Development mode (the dev method) authenticates nothing: the request's sub is
//     believed if a configured list allows it. Every issuance through it logs a warning.
package witissuer
