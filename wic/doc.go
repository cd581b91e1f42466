// Package wic issues and verifies X.509 Workload Identity Certificates (WICs).
//
// Read verify.go first (Verify and its options), then anchors.go (BundlesOf: anchors
// grouped by the trust domain each names, for VerifyWithBundles), then der.go (issuing:
// NewCA, IssueWIC).
//
// Specifications:
//   - draft-ietf-wimse-mutual-tls-02 section 3: a workload authenticates in TLS with a
//     certificate whose single URI SAN is its workload identifier; both peers check that
//     the other's identifier lies in the trust domain they expect.
//   - draft-ietf-wimse-workload-creds-02 section 6.1: the identifier is carried in exactly
//     one URI SAN; other SAN types may appear but are never the identity.
//   - draft-ietf-wimse-workload-creds-02 section 9.3: the relying party validates the
//     chain against the anchors of the peer's trust domain and rejects an identifier
//     outside that trust domain.
//
// Verification order and the code each step reports (every rejection is an
// *errcode.Error):
//
//  1. DER parse of the leaf and intermediates: certificate_parse_error.
//  2. The leaf's validity window at the injected time, with no leeway:
//     certificate_not_valid.
//  3. Algorithm: the signature algorithm is derived from the issuing CA's key (P-256 means
//     ecdsa-with-SHA256, Ed25519 means Ed25519), never taken from the certificate's own
//     signatureAlgorithm. A certificate whose claimed algorithm the candidate CA key
//     cannot produce, or any other algorithm: unsupported_alg.
//  4. Path validation to the roots (crypto/x509, CurrentTime = the injected time): no
//     chain to an anchor whose signatures verify ("wrong CA", or an intermediate that is
//     not a CA, which crypto/x509 reports the same way) is invalid_signature; an expired
//     intermediate, an extended key usage outside WithKeyUsages or a name-constraint
//     violation is certificate_not_valid; an unknown critical extension is
//     unsupported_critical; no roots at all is untrusted_issuer.
//  5. Exactly one URI SAN: none is missing_identifier, two or more (of any scheme) is
//     multiple_identifiers; the one value must pass identifier.Parse as written, so a
//     second spelling keeps identifier.Parse's own code (no normalisation).
//  6. The leaf is an end entity: a CA flag, keyCertSign or cRLSign is
//     certificate_not_valid (it is not valid as a workload certificate).
//  7. WithTrustDomain: an identifier outside the expected trust domain is
//     untrusted_issuer.
//
// The issuance helpers (NewCA, IssueWIC) reproduce the layout of the WIMSE conformance
// vectors byte for byte; see der.go for why that layout is written by hand.
package wic
