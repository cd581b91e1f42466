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
//  7. with VerifyRequest, the request keys oth names (RequestOptions.BindRequest:
//     @method, @path, @query, content-digest) against the request, and then, last of
//     the fields, the body against a bound Content-Digest (httpsig's SIG-4 codes);
//  8. jti claimed once in the replay store, scoped to the sender (WPT-8), after every
//     other check, so that only an authenticated request spends one; a store error is a
//     rejection that says the check could not be completed.
//
// VerifyRequestFields stops before the body: a receiver runs its own field checks
// (Txn-Token, Dialog-Context) and then Pending.Finish, so that no body is read for a
// request refused on its fields.
//
// What a WPT does not bind: without BindRequest (the sender's choice, per route), the
// method, the path, the query and the body of the request (wpt-02 section 3.3); aud
// names the recipient, which is often a fixed value rather than the target URI. The
// request keys of BindRequest are this package's application profile of oth (wpt-02
// lets one say where a key's value is found): a receiver that does not know it refuses
// the WPT, as wpt-02 requires for an oth entry not understood.
//
// Hashes are base64url(SHA-256(value)), where a value is the field value with leading
// and trailing spaces and tabs removed (wpt-02 section 2, oth).
package wpt
