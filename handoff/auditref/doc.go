// Package auditref names a checkpoint of a dialogtrust audit trail (package audit) in
// a handoff's context references (handoff-context section 2.2), so that a delegate can
// check that the delegator's trail, as signed at that head, is what the work depends
// on, as Appendices A and B of the draft do for a SCITT receipt and a Learnlog signed
// head (issue 26: "a checkpoint can be named as a handoff context reference").
//
// The reference's kind is Kind, an absolute URI naming this definition (section 2.2:
// a kind the draft does not define MUST be one):
//
//   - proof is the checkpoint's signed note (golang.org/x/mod/sumdb/note), as text: the
//     checkpoint body (origin "dialogtrust-audit/<writer>", the tree size and the
//     base64 RFC 6962 root, each line ending in a newline), an empty line, and the
//     signature lines, exactly the octets audit.Log.SignedCheckpoint returns and the
//     value of the trail's checkpoint line's "checkpoint" member;
//   - dig is the SHA-256 of those octets (the UTF-8 octets of proof);
//   - loc, when present, says where the trail can be fetched; it is not read here.
//
// The delegate checks, in order: the proof is present, text, and at most MaxProof
// octets (checkpoint_ref_invalid); dig is the SHA-256 of it (checkpoint_ref_mismatch);
// the note's signature verifies with the writer service's keys (its JWKS, through
// audit.Verifiers; audit_checkpoint_signature, failed for a bad signature, could not
// be completed for a key it does not hold); its text is a checkpoint whose origin
// names a dialogtrust audit writer, one of those it expects when it names any
// (checkpoint_ref_invalid). A verified reference shows that the writer signed its
// trail's head at that size; it does not show that the trail is complete after it, nor
// what its records say: that is `dialogtrust audit verify`'s, with the trail's files.
//
// Read first: ref.go.
package auditref
