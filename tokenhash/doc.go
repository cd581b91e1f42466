// Package tokenhash names a token without showing it: Of returns base64url(SHA-256) of
// the token's octets exactly as presented. It is the one form in which a token is
// logged (oauth.md 1.12; "never log a whole token"), the wth, ath, tth, dth and oth
// claims of a WPT (draft-ietf-wimse-wpt section 3, over the field value without
// surrounding spaces and tabs, which the caller trims) and the sha-256 Digest value of
// a handoff grant (handoff-context section 5.7).
//
// Everything is in tokenhash.go (Of).
//
// It imports only the standard library, so every layer may use it.
package tokenhash
