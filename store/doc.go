// Package store keeps the state that makes single-use values single-use.
//
// A Replay claims a key once for a time to live. The broker claims:
//
//   - the jti of every Workload Proof Token, for the window in which the WPT would be
//     valid (draft-ietf-wimse-wpt-02 section 3.1; the spec scopes the cache per sender,
//     so the caller puts the sender into the key);
//   - the nonce of every WIMSE HTTP message signature, for the signature's lifetime
//     (draft-ietf-wimse-http-signature-07 section 3; nonces are not scoped by sender);
//   - later, the (iss, hop) pair of a handoff offer (agentproto handoff context,
//     section 5.2), with records of its own.
//
// Building the key is the caller's job: the store treats it as opaque bytes and never
// stores or logs it as given. Both implementations keep a fixed-size SHA-256 digest of
// the key instead, so memory per entry does not depend on what a sender chose as its
// jti or nonce, and a Redis Cluster hash tag inside a key ("{...}") cannot steer all
// claims onto one slot.
//
// The store fails closed. Claim returns nil only when the key is now claimed by this
// call. Every outcome that is not known to be a first claim is an error: a replay
// (errcode.Replayed), and anything that prevents an answer, such as a Redis timeout,
// a lost connection or a full memory store, as an Incomplete errcode.StoreUnavailable.
// Callers reject on any error. A store that is unsure never answers "fresh", and never
// forgets a claim that is still live to make room for a new one.
//
// Two implementations:
//
//   - Memory, for a single broker process: bounded, sharded, expiry by min-heap, with an
//     injectable clock so tests never sleep.
//   - Redis, for several brokers sharing one view (single node or Cluster): one Lua
//     script per claim, SET key value PX ttl NX behind a check of the claim's epoch key
//     (LossTags hash tags, each with an epoch), so that a Redis that lost its data (a
//     restart without persistence, a flush, an eviction) is noticed by the brokers that
//     were running and its claims refused until everything claimed before the loss has
//     expired (WithLossQuarantine). See Redis for what it cannot notice.
//     WithReplicaAcks makes a claim count only once N replicas acknowledged it (WAIT on
//     the claim's connection), so an asynchronous failover cannot lose it.
//
// The claim windows of brokers that share a Redis only agree if they use the same key
// prefix and the same version of this package: the digest layout (prefix, "{xx}" tag,
// digest; and the epoch keys prefix + "{xx}epoch") is part of the deployment contract.
package store
