// Package spiffeadapter lets go-spiffe users take WITs from a dialogtrust WIT issuer and
// validate them with go-spiffe's experimental WIT-SVID packages
// (github.com/spiffe/go-spiffe/v2/exp/svid/witsvid and exp/bundle/witbundle).
//
// Read svid.go first (SVIDSource), then bundle.go (JWKSSource).
//
// A WIT of the issuer whose sub is a spiffe:// identifier is a WIT-SVID: typ wit+jwt, kid,
// sub, exp, cnf.jwk with alg, no aud (draft-ietf-wimse-workload-creds-02 section 5.1;
// wimse.md 2.1-2.5). SVIDSource is a witsvid.Source that obtains them from the issuer
// through witissuer.Client, a fresh key for each (WIT-3); BundleFromJWKS and JWKSSource
// turn the issuer's JWKS into witbundle bundles, the trust anchors witsvid.ParseAndValidate
// needs (WIT-1: configured, never named by a token).
//
// go-spiffe's witsvid v2.9.0 accepts only RSA, ECDSA and RSA-PSS algorithms, for the WIT's
// signature and for cnf.jwk alike: EdDSA WITs and WITs certifying Ed25519 keys do not
// validate there, so SVIDSource always asks for ES256 keys and the issuer must sign with
// ES256 (keys.alg) for go-spiffe's relying parties.
//
// The package is separate from wit and witissuer so that neither carries go-spiffe's
// go-jose dependency.
package spiffeadapter
