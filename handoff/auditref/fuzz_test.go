package auditref_test

import (
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/handoff/auditref"
	"github.com/dialogtrust/dialogtrust/keys"
)

// FuzzVerify: a checkpoint reference from an offer is network input. Whatever its
// proof and dig, Verify answers with a stable code and never panics, and nothing but
// the genuine note verifies.
func FuzzVerify(f *testing.F) {
	k, err := keys.Generate(keys.EdDSA)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := trailRef(f, k)
	vs := verifiers(f, k)
	genuine := good.Proof.(string)
	f.Add(genuine, good.Dig.Val)
	f.Add(strings.Replace(genuine, "tts-a", "tts-b", 1), good.Dig.Val)
	f.Add("dialogtrust-audit/x\n1\nAAAA\n\n— k AAAA\n", "")
	f.Fuzz(func(t *testing.T, proof, dig string) {
		ref := handoff.ContextRef{Kind: auditref.Kind, Dig: handoff.Digest{Alg: handoff.SHA256, Val: dig}, Proof: proof}
		cp, err := auditref.Verify(ref, vs)
		if err == nil {
			if proof != genuine || cp.Writer != "tts-a" {
				t.Fatalf("verified a note that is not the genuine one: %q", proof)
			}
			return
		}
		switch errcode.CodeOf(err) {
		case errcode.CheckpointRefInvalid, errcode.CheckpointRefMismatch, errcode.AuditCheckpointSignature:
		default:
			t.Fatalf("code %s: %v", errcode.CodeOf(err), err)
		}
	})
}
