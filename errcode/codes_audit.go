package errcode

// Codes of the audit trail (package audit, issue 26). Each is documented in
// docs/errors.md. AuditUnavailable refuses an issuance; the others are the findings of
// `dialogtrust audit verify`. They live in their own file so that codes.go stays as it
// was.
const (
	// AuditUnavailable: the audit record of an issuance could not be written (the sink
	// failed), so the token is not issued (Incomplete, HTTP 503): no token leaves a
	// token endpoint without its record.
	AuditUnavailable Code = "audit_unavailable"
	// AuditRecordMalformed: a line of an audit file is not a record or a checkpoint of
	// the documented form (or is over the size bound).
	AuditRecordMalformed Code = "audit_record_malformed"
	// AuditRecordAltered: a record's hash is not the prev the next record of its
	// writer names: the record was edited (or one was put in its place).
	AuditRecordAltered Code = "audit_record_altered"
	// AuditRecordRemoved: a writer's sequence numbers skip: records were removed.
	AuditRecordRemoved Code = "audit_record_removed"
	// AuditRecordReordered: a writer's records are all there but out of order.
	AuditRecordReordered Code = "audit_record_reordered"
	// AuditRecordInserted: a record repeats a sequence number of its writer: a record
	// was inserted.
	AuditRecordInserted Code = "audit_record_inserted"
	// AuditCheckpointMismatch: a checkpoint's tree head is not the Merkle tree hash of
	// its writer's records up to its size: records it covers were changed, even if the
	// chain was recomputed.
	AuditCheckpointMismatch Code = "audit_checkpoint_mismatch"
	// AuditCheckpointSignature: a checkpoint's signed note does not verify with the
	// given keys (or names a key they do not hold).
	AuditCheckpointSignature Code = "audit_checkpoint_signature"
	// AuditTruncated: a checkpoint covers more records than the files hold: the tail
	// was cut after the checkpoint was made.
	AuditTruncated Code = "audit_truncated"
	// CheckpointRefInvalid: a handoff context reference that names an audit checkpoint
	// (package handoff/auditref) is not one: its proof is missing, not text, over the
	// bound, not a signed note whose text is a checkpoint of a dialogtrust audit trail,
	// or its origin names a writer the delegate does not expect.
	CheckpointRefInvalid Code = "checkpoint_ref_invalid"
	// CheckpointRefMismatch: a checkpoint reference's dig is not the SHA-256 of its
	// proof, the signed note: one of them was changed.
	CheckpointRefMismatch Code = "checkpoint_ref_mismatch"
)
