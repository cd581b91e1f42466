// Package store keeps the state that makes single-use values single-use, and the small
// records that must outlive one request.
//
// Read store.go first (Replay, the single-use claims), then records.go (Records,
// compare and swap), then their in-memory backends memory.go and records_memory.go.
//
// A Replay claims a key once for a time to live. The broker claims:
//
//   - the jti of every Workload Proof Token, for the window in which the WPT would be
//     valid (draft-ietf-wimse-wpt-02 section 3.1; the spec scopes the cache per sender,
//     so the caller puts the sender into the key);
//   - the nonce of every WIMSE HTTP message signature, for the signature's lifetime
//     (draft-ietf-wimse-http-signature-07 section 3; nonces are not scoped by sender);
//   - the jtis of token requests and client assertions.
//
// Records keeps small values under keys, with create-if-absent, compare-and-swap and
// compare-and-delete: the (iss, hop) records of a handoff delegate (agentproto handoff
// context, section 5.2) and the records of a dialog registry.
//
// Building the key is the caller's job: a store treats it as opaque bytes and never
// stores or logs it as given. Every implementation keeps a fixed-size SHA-256 digest of
// the key instead, so memory per entry does not depend on what a sender chose as its
// jti or nonce, and a Redis Cluster hash tag inside a key ("{...}") cannot steer all
// claims onto one slot.
//
// The stores fail closed. Claim returns nil only when the key is now claimed by this
// call. Every outcome that is not known to be a first claim is an error: a replay
// (errcode.Replayed), and anything that prevents an answer, such as a Redis timeout,
// a lost connection or a full memory store, as an Incomplete errcode.StoreUnavailable.
// Callers reject on any error. A store that is unsure never answers "fresh", and never
// forgets a claim or a record that is still live to make room for a new one.
//
// This package holds the interfaces, what every backend shares (ValidateClaim,
// ValidateRecord, Replayed, NoExpiry, MaxRecordSize) and the in-process backends:
// Memory and MemoryRecords, for a single broker process, bounded, with expiry by
// min-heap and an injectable clock (WithClock, for both) so tests never sleep. The
// Redis backends, shared by several brokers, are in store/redisstore, so that a package
// that only needs the interfaces does not link a Redis client. store/storetest holds
// the contract every backend must pass.
package store
