package auditref

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// Kind is the reference kind of an audit checkpoint: an absolute URI naming its
// definition (docs/audit-checkpoint.md).
const Kind = "https://github.com/dialogtrust/dialogtrust/blob/main/docs/audit-checkpoint.md"

// MaxProof bounds a reference's proof, in octets: a checkpoint with one signature is
// a few hundred.
const MaxProof = 8 << 10

// FromLog is the reference to l's latest checkpoint, made now when records came since
// the last one (audit.Log.SignedCheckpoint); loc, when not empty, is where the trail
// can be fetched.
func FromLog(l *audit.Log, loc string) (handoff.ContextRef, error) {
	signed, err := l.SignedCheckpoint()
	if err != nil {
		return handoff.ContextRef{}, err
	}
	return Ref(signed, loc)
}

// Ref is the reference to the checkpoint whose signed note is signed.
func Ref(signed []byte, loc string) (handoff.ContextRef, error) {
	if len(signed) == 0 || len(signed) > MaxProof || !utf8.Valid(signed) {
		return handoff.ContextRef{}, errcode.New(errcode.CheckpointRefInvalid, "a checkpoint's signed note is 1 to %d octets of UTF-8", MaxProof)
	}
	ref := handoff.ContextRef{Kind: Kind, Dig: digest(signed), Proof: string(signed)}
	if loc != "" {
		ref.Loc = &loc
	}
	return ref, ref.Validate()
}

func digest(b []byte) handoff.Digest {
	sum := sha256.Sum256(b)
	return handoff.Digest{Alg: handoff.SHA256, Val: base64.RawURLEncoding.EncodeToString(sum[:])}
}

// Checkpoint is what a verified reference names.
type Checkpoint struct {
	// Writer is the trail's writer (the origin without audit.OriginPrefix), Size the
	// number of its records the head covers, Root their RFC 6962 tree hash.
	Writer string
	Size   uint64
	Root   []byte
	// Signer is the note key name that signed it (audit.NamePrefix + the key's kid).
	Signer string
}

// Verify checks ref as the package documentation says, with vs (audit.Verifiers over
// the writer service's JWKS) and, when writers is not empty, that the checkpoint's
// writer is one of them. Every refusal is an *errcode.Error.
func Verify(ref handoff.ContextRef, vs note.Verifiers, writers ...string) (*Checkpoint, error) {
	if ref.Kind != Kind {
		return nil, errcode.New(errcode.CheckpointRefInvalid, "the reference's kind is not %s", Kind)
	}
	if err := ref.Validate(); err != nil {
		return nil, errcode.Wrap(errcode.CheckpointRefInvalid, err, "the reference is malformed")
	}
	proof, ok := ref.Proof.(string)
	if !ok || proof == "" || len(proof) > MaxProof {
		return nil, errcode.New(errcode.CheckpointRefInvalid, "the reference's proof is not a signed note as text of at most %d octets", MaxProof)
	}
	if ref.Dig.Alg != handoff.SHA256 || !ref.Dig.Equal(digest([]byte(proof))) {
		return nil, errcode.New(errcode.CheckpointRefMismatch, "dig is not the SHA-256 of the signed note")
	}
	if vs == nil {
		return nil, errcode.Unavailable(errcode.AuditCheckpointSignature, nil, "no keys to check the checkpoint's signature with")
	}
	n, err := note.Open([]byte(proof), vs)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return nil, errcode.Unavailable(errcode.AuditCheckpointSignature, err, "the checkpoint is signed by no key the given keys hold")
		case errors.As(err, &invalid):
			return nil, errcode.Wrap(errcode.AuditCheckpointSignature, err, "the checkpoint's signature does not verify")
		}
		return nil, errcode.Wrap(errcode.CheckpointRefInvalid, err, "the proof is not a signed note")
	}
	var cp tlog.Checkpoint
	if rest, err := cp.Unmarshal([]byte(n.Text)); err != nil || len(rest) != 0 {
		return nil, errcode.New(errcode.CheckpointRefInvalid, "the signed note is not a checkpoint of an audit trail")
	}
	writer, ok := strings.CutPrefix(cp.Origin, audit.OriginPrefix)
	if !ok || writer == "" {
		return nil, errcode.New(errcode.CheckpointRefInvalid, "the checkpoint's origin is not a dialogtrust audit writer's")
	}
	if len(writers) > 0 && !contains(writers, writer) {
		return nil, errcode.New(errcode.CheckpointRefInvalid, "the checkpoint is of writer %s, not one this delegate expects", errcode.Cut(writer))
	}
	return &Checkpoint{Writer: writer, Size: cp.Size, Root: cp.Hash, Signer: n.Sigs[0].Name}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Verifier is the handoff.ProofVerifier of Kind, for a handoff receiver's reference
// policy (handoff.RefPolicy.Verifiers[Kind]): a reference it verifies is verified; a
// dig that does not match or a signature that does not verify is a mismatch; anything
// it could not check (a malformed reference, a key it does not hold) unverifiable.
type Verifier struct {
	// Keys verifies checkpoint signatures: audit.Verifiers over the writer service's
	// JWKS.
	Keys note.Verifiers
	// Writers, when not empty, are the writers whose checkpoints are accepted.
	Writers []string
}

// VerifyProof implements handoff.ProofVerifier; obj is not used (the proof is the
// object).
func (v Verifier) VerifyProof(_ context.Context, ref handoff.ContextRef, _ *handoff.RefObject) (handoff.RefOutcome, error) {
	_, err := Verify(ref, v.Keys, v.Writers...)
	switch {
	case err == nil:
		return handoff.RefVerified, nil
	case errcode.KindOf(err) == errcode.Incomplete:
		return handoff.RefUnverifiable, err
	case errcode.CodeOf(err) == errcode.CheckpointRefMismatch, errcode.CodeOf(err) == errcode.AuditCheckpointSignature:
		return handoff.RefMismatch, nil
	}
	return handoff.RefUnverifiable, err
}
