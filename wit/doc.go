// Package wit mints and validates WIMSE Workload Identity Tokens
// (draft-ietf-wimse-workload-creds-02 section 5.1; wimse.md sections 2.1-2.5).
//
// Read wit.go first (Claims, WIT and the validator), then issue.go (Issuer) and
// source.go (RefreshingSource); decode.go and cache.go are the validator's fast paths.
//
// A WIT is a JWT with typ "wit+jwt" that binds one workload identifier (sub) to a public
// key (cnf.jwk, with its one alg). Validation follows the checklist of wimse.md 2.5:
// compact JWS; typ; sub a canonical workload identifier whose trust domain selects the
// trust anchors (WIT-1: never keys named by the token); alg allowed and matching the
// anchor key chosen by kid; signature; exp present and not passed, lifetime capped; cnf.jwk
// with an alg that can prove possession (not none, not symmetric, not encryption) and
// fits the key; iss on the allow-list when one is configured.
//
// A validated WIT authenticates nobody by itself: the caller is authenticated only when a
// proof of possession (package wpt or httpsig) made with the cnf key verifies (WIT-4).
// Source (source.go) keeps a workload's WIT fresh with a new key each time (WIT-3); a
// fixed Credential is its own Source. The options of the validator, the issuer and the
// source are in options.go; read wit.go first.
package wit
