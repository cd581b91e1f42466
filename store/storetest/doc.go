// Package storetest is the contract every store.Replay and store.Records backend must
// pass, for the tests of those backends: RunReplay and RunRecords run it against a
// constructor, and the Must and Want helpers check single outcomes the same way.
//
// Read replay.go first (RunReplay), then records.go (RunRecords).
//
// The contract is the fail-closed rule of package store: a claim succeeds exactly once
// per key and time to live (a replay is a failed errcode.Replayed), invalid input is a
// failed errcode.InvalidRequest that claims or stores nothing, and a store that cannot
// answer (a canceled or expired context) returns an incomplete errcode.StoreUnavailable,
// never "fresh". Claims protect WPT jtis (draft-ietf-wimse-wpt-02 section 3.1) and HTTP
// signature nonces (draft-ietf-wimse-http-signature-07 section 3); records hold the
// (iss, hop) state of a handoff delegate (handoff context section 5.2).
//
// It lives in a non-test file so that store's memory backends and the Redis backends of
// store/redisstore run one and the same suite.
package storetest
