// Package revoke keeps an operator's revocations of a dialog, a workload or one
// transaction (issue 26), and answers, at every token issuance and every verified
// request, whether what it is in has been revoked.
//
// Read revocation.go first (Revocation, what may be revoked and for how long), then
// store.go (Store, the shared list, and its in-process backend Memory), then checker.go
// (Checker, the short local cache in front of a Store, with the operator's bound).
//
// A revocation names its kind (Dialog, Workload, Txn), the identifier, a reason and an
// expiry: it needs to outlive only the longest token that could be used in what it
// revokes, so the operator gives (or the admin API defaults) that lifetime. A dialog's
// revocation can reach the dialogs linked from it (dialog-binding section 11), but only
// where the link is known: the participant that linked them, which passes the dialog a
// request's dialog was linked from in Subject.LinkedFrom. A receiver that verifies a
// request knows no such link and checks the dialog itself.
//
// The Checker answers from a snapshot of the store it keeps locally; a snapshot older
// than the configured bound (WithBound, the operator's "refused everywhere within N
// seconds") is never used: it is fetched again first, and a store that cannot answer
// then makes every check a could-not-be-completed errcode.StoreUnavailable (fail closed).
// A store that publishes its changes (Memory, redisstore.Revocations with Redis pub/sub)
// has the checker refetch as soon as it hears of one, well within the bound.
//
// The Redis backend, shared by the TTS replicas, receivers and ingresses of a trust
// domain and surviving their restarts, is store/redisstore's Revocations, so that this
// package links no Redis client; revoke/revoketest is the contract both pass.
package revoke
