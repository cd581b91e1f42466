// Package wpt mints and validates WIMSE Workload Proof Tokens (draft-ietf-wimse-wpt-02;
// wimse.md section 3) with the dth claim of dialog-binding section 8.
//
// A WPT is a JWT (typ "wpt+jwt") signed with the key of the sender's WIT, one per
// request. The default carriage is wpt-02's `Authorization: WPT <jwt>`; the wpt-01
// carriage (`Workload-Proof-Token` field, `ath` over a bearer access token) is also
// accepted by the request verifier.
//
// Verification, first failure wins (WPT-1..10 of wimse.md 3.3):
//  1. the WIT is validated first (WPT-2, package wit);
//  2. compact JWS, typ "wpt+jwt" (WPT-4), alg string-equal to cnf.jwk.alg and the
//     signature by the cnf key (WPT-3);
//  3. exp present, not passed, not further ahead than the maximum lifetime (WPT-6);
//  4. aud equal to one of the configured audiences (WPT-5; never from Host);
//  5. wth equal to the hash of the WIT as carried (WPT-7);
//  6. ath (wpt-01 only), tth, every oth entry, and dth: each present exactly when its
//     field is in the request and equal to the hash of the field value (WPT-9,
//     dialog-binding section 8: dth is REQUIRED when Dialog-Context is present);
//  7. jti claimed once in the replay store, scoped to the sender (WPT-8); a store error
//     is a rejection that says the check could not be completed.
//
// Hashes are base64url(SHA-256(value)), where a value is the field value with leading
// and trailing spaces and tabs removed (wpt-02 section 2, oth).
package wpt
