// Package audit is the audit trail of the token endpoints (issue 26): one JSON record
// per decision (issued or refused) of the TTS and of identity chaining's two
// authorization servers, chained per writer and checkpointed with a signed tree head,
// as transparency logs do (RFC 6962 trees, the C2SP checkpoint body in a signed note).
//
// A record (Entry) holds the time, the decision, its stable code, the rule and grant,
// txn, dlg, the dialog it was linked from, req_wl, the requester, the SHA-256 of the
// subject token and of the issued token (never a whole token), the scopes and the
// audience. Each record names its writer, its sequence number and the RFC 6962 leaf
// hash of the writer's record before it (prev); the first record of a writer that opens a file
// already holding records names that file's last record, so restarts and rotated files
// stay one chain. Every checkpoint interval (and at rotation and Close) the writer
// appends a checkpoint: a signed note (golang.org/x/mod/sumdb/note) whose body is a
// transparency-dev checkpoint (origin, size, RFC 6962 root over the writer's records,
// github.com/transparency-dev/merkle) signed with the service's active key (ES256 or
// Ed25519: note.go adapts package keys to note's Signer and Verifier).
//
// A sink whose write is a network round trip implements BatchSink: the Log then
// commits records in groups (batch.go), the records of concurrent requests in one
// write, each Append returning once its group is taken, in chain order. The Redis
// stream sink shared by replicas is one; it lives with the Redis client, in
// cmd/internal/kit (this package imports no Redis).
//
// Verify (verify.go) reads files of records and checkpoints and reports, each with its
// own errcode, a removed, altered, reordered or inserted record, a checkpoint whose
// tree head or signature does not hold, and a tail cut after a checkpoint kept
// elsewhere (the .checkpoint file beside the log, or any copy of a checkpoint line).
//
// Receivers and ingresses (dialog.WithAuditor) and the revocations admin API
// (revokeapi.Config.Auditor) write their records through Appender, which Log
// implements; Log.SignedCheckpoint gives the latest signed head, which package
// handoff/auditref names in a handoff's context references.
//
// Read first: log.go (the writer), then entry.go, batch.go, verify.go.
package audit
