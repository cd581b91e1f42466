// Package redisstore keeps the replay claims and records of package store in Redis, a
// single node, a primary found through Redis Sentinel, or a Cluster, so that every
// broker sharing it sees one view: a WPT jti or an HTTP signature nonce accepted by one
// broker is a replay at every other
// (draft-ietf-wimse-wpt-02 section 3.1, draft-ietf-wimse-http-signature-07 section 3),
// and a handoff delegate's (iss, hop) records survive its restarts (handoff context
// section 5.2).
//
// Read replay.go first (Replay, its options and loss detection), then records.go
// (Records); batch.go and heldconn.go are how claims share round trips, conn.go and
// sentinel.go how the client is made, keyring.go the shared signing keys.
//
// Replay (NewReplay) makes a claim one Lua script: SET key value PX ttl NX behind a
// check of the claim's epoch key; claims from concurrent requests share one pipeline
// per node (one round trip, a write and a read for all of them), on a single node over
// connections the store holds (heldconn.go, around go-redis's per-command pool check). Records (NewRecords) makes every operation one script
// on one key. Both are Cluster-safe (every script touches one slot) and keep only a
// SHA-256 digest of the caller's key, so a sender can neither put its values into Redis
// nor choose the slot of its claims.
//
// They fail closed: a timeout, a lost connection, a MOVED from a node of a Cluster
// reached without cluster mode, or a client that NewClient refused to configure is an
// Incomplete errcode.StoreUnavailable, never "fresh" and never "no record".
//
// Loss detection: the claims are spread over LossTags hash tags, each with an epoch, so
// that a Redis that lost its data (a restart without persistence, a flush, an eviction)
// is noticed by the brokers that were running and its claims refused until everything
// claimed before the loss has expired (WithLossQuarantine, WithLossHook). See Replay for
// what it cannot notice. WithReplicaAcks makes a claim count only once N replicas have
// acknowledged it (WAIT on the claim's connection), so an asynchronous failover cannot
// lose it. NewFailoverClient asks Redis Sentinel for the primary and follows its
// failovers. NewClient's WithAuth and WithTLS, and Sentinel's credentials and TLS, are
// go-redis's own options: an ACL user or requirepass password, and TLS 1.2 or later
// with the deployment's CA and, for mutual TLS, a client certificate. A refused
// password or a failed handshake fails closed like a Redis that does not answer.
//
// KeyRing (NewKeyRing) is the keys.RingBackend of a service's replicas: the key ring
// in one hash key, encrypted with AES-256-GCM under a key derived from a configured
// secret, changed by a compare-and-set script on its version.
//
// The claim windows of brokers that share a Redis only agree if they use the same key
// prefix and the same version of this package: the digest layout (prefix, "{xx}" tag,
// digest; and the epoch keys prefix + "{xx}epoch") is part of the deployment contract.
package redisstore
