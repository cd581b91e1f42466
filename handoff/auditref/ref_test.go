package auditref_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/handoff/auditref"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/internal/testkit/audittest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"golang.org/x/mod/sumdb/note"
)

// verifiers verify checkpoints signed by k.
func verifiers(t testing.TB, k *keys.PrivateKey) note.Verifiers {
	t.Helper()
	vs, err := audit.Verifiers([]*keys.PublicKey{k.Public()})
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// trailRef writes three records to a log signed by k (writer tts-a) and returns the
// reference to its checkpoint and the sink.
func trailRef(t testing.TB, k *keys.PrivateKey) (handoff.ContextRef, *audittest.Sink) {
	t.Helper()
	sink := &audittest.Sink{}
	l, err := audit.New(sink, audit.FixedKey(k), audit.WithWriter("tts-a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auditref.FromLog(l, ""); err == nil {
		t.Fatal("a reference to a log without records")
	}
	for i := 0; i < 3; i++ {
		if err := l.Append(&audit.Entry{Decision: audit.Issued, Dialog: "D1"}); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := auditref.FromLog(l, "https://ops.a.example/audit")
	if err != nil {
		t.Fatal(err)
	}
	return ref, sink
}

// Issue 26 ("a checkpoint can be named as a handoff context reference"): the
// reference's proof is the signed note the trail's checkpoint line holds, octet for
// octet, and dig the SHA-256 of those octets; it verifies with the writer's key and
// names the writer, size and root.
func TestIssue26_CheckpointRefIsTheTrailsSignedNote(t *testing.T) {
	k := testkit.NewKey(t, keys.ES256)
	ref, sink := trailRef(t, k)
	var line struct {
		Checkpoint string `json:"checkpoint"`
	}
	lines := sink.Lines()
	last := lines[len(lines)-1]
	if err := json.Unmarshal(last, &line); err != nil || line.Checkpoint == "" {
		t.Fatalf("the last line is not a checkpoint: %s", last)
	}
	sum := sha256.Sum256([]byte(line.Checkpoint))
	if ref.Kind != auditref.Kind || ref.Proof != line.Checkpoint || ref.Dig.Alg != handoff.SHA256 ||
		ref.Dig.Val != base64.RawURLEncoding.EncodeToString(sum[:]) || ref.Loc == nil {
		t.Fatalf("reference %+v", ref)
	}
	cp, err := auditref.Verify(ref, verifiers(t, k), "tts-a")
	if err != nil || cp.Writer != "tts-a" || cp.Size != 3 || len(cp.Root) != 32 || cp.Signer != audit.NamePrefix+k.KID() {
		t.Fatalf("Verify = %+v, %v", cp, err)
	}
}

// Issue 26, section 2.2 and step 7 of section 5.1: a delegator names its trail's
// checkpoint in a signed offer's refs (JWS and COSE), the offer travels as JSON, and
// the delegate whose reference policy requires it reports it verified and accepts.
func TestIssue26_CheckpointRefCarriedInSignedOffer(t *testing.T) {
	for _, form := range []handoff.Form{handoff.JWS, handoff.COSE} {
		auditKey := testkit.NewKey(t, keys.ES256)
		ref, _ := trailRef(t, auditKey)
		d := offerWith(t, form, ref, auditref.Verifier{Keys: verifiers(t, auditKey), Writers: []string{"tts-a"}})
		if d.Outcome != handoff.OutcomeAccepted || len(d.Refs) != 1 || d.Refs[0].Outcome != handoff.RefVerified {
			t.Fatalf("form %v: decision %+v refs %+v", form, d, d.Refs)
		}
	}
}

// offerWith has a delegator sign an offer naming ref, carries it as JSON, and returns
// the decision of a delegate requiring every reference, with v for the kind.
func offerWith(t *testing.T, form handoff.Form, ref handoff.ContextRef, v handoff.ProofVerifier) *handoff.Decision {
	t.Helper()
	ctx := context.Background()
	const planner, coder = "wimse://a.example/agent/planner", "wimse://a.example/agent/coder"
	pk := testkit.NewKey(t, keys.ES256)
	trust := handoff.NewStaticTrust()
	if err := trust.Bind(planner, pk.Public()); err != nil {
		t.Fatal(err)
	}
	del, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: planner, Key: pk, Trust: trust, Form: form})
	if err != nil {
		t.Fatal(err)
	}
	h, err := del.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: coder, Dialog: "D1", Refs: []handoff.ContextRef{ref}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	carried, err := handoff.ParseHandoffJSON(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh receiver lost no records (section 8.4 does not apply here).
	r := handoff.NewReceiver(coder, trust, store.NewMemoryRecords(), handoff.WithRecordsLostAt(time.Time{}),
		handoff.WithRefPolicy(handoff.RefPolicy{Require: handoff.RequireAllRefs, Verifiers: map[string]handoff.ProofVerifier{auditref.Kind: v}}))
	dec, err := r.Receive(ctx, handoff.Inbound{Handoff: carried, Dialog: "D1", AuthenticatedSender: planner})
	if err != nil && dec == nil {
		t.Fatal(err)
	}
	return dec
}

// Issue 26: a tampered checkpoint reference is refused with a stable code: a changed
// proof (checkpoint_ref_mismatch), a changed proof with dig recomputed
// (audit_checkpoint_signature, failed), another writer's key (could not be completed),
// a writer not expected or a proof that is not a note (checkpoint_ref_invalid); a
// delegate requiring the reference rejects the offer that carries a tampered one.
func TestIssue26_CheckpointRefTamperedRefused(t *testing.T) {
	k := testkit.NewKey(t, keys.ES256)
	good, _ := trailRef(t, k)
	vs := verifiers(t, k)
	proof := good.Proof.(string)
	tampered := good
	tampered.Proof = strings.Replace(proof, "\n3\n", "\n4\n", 1)
	if tampered.Proof == proof {
		t.Fatal("the size line was not found")
	}
	redigested, err := auditref.Ref([]byte(tampered.Proof.(string)), "")
	if err != nil {
		t.Fatal(err)
	}
	otherDig := good
	otherDig.Dig.Val = strings.Repeat("A", len(good.Dig.Val))
	notNote, _ := auditref.Ref([]byte("not a note\n"), "")
	notText := good
	notText.Proof = json.Number("1")
	for name, c := range map[string]struct {
		ref     handoff.ContextRef
		vs      note.Verifiers
		writers []string
		code    errcode.Code
		kind    errcode.Kind
	}{
		"proof changed":     {tampered, vs, nil, errcode.CheckpointRefMismatch, errcode.Failed},
		"dig changed":       {otherDig, vs, nil, errcode.CheckpointRefMismatch, errcode.Failed},
		"dig recomputed":    {redigested, vs, nil, errcode.AuditCheckpointSignature, errcode.Failed},
		"unknown key":       {good, verifiers(t, testkit.NewKey(t, keys.ES256)), nil, errcode.AuditCheckpointSignature, errcode.Incomplete},
		"unexpected writer": {good, vs, []string{"tts-b"}, errcode.CheckpointRefInvalid, errcode.Failed},
		"not a note":        {notNote, vs, nil, errcode.CheckpointRefInvalid, errcode.Failed},
		"proof not text":    {notText, vs, nil, errcode.CheckpointRefInvalid, errcode.Failed},
	} {
		_, err := auditref.Verify(c.ref, c.vs, c.writers...)
		if errcode.CodeOf(err) != c.code || errcode.KindOf(err) != c.kind {
			t.Errorf("%s: %v (%s, %s), want %s", name, err, errcode.CodeOf(err), errcode.KindOf(err), c.code)
		}
	}
	for name, ref := range map[string]handoff.ContextRef{"proof changed": tampered, "dig recomputed": redigested} {
		d := offerWith(t, handoff.JWS, ref, auditref.Verifier{Keys: vs})
		if d.Outcome == handoff.OutcomeAccepted || len(d.Refs) != 1 || d.Refs[0].Outcome != handoff.RefMismatch {
			t.Errorf("%s: decision %+v refs %+v", name, d, d.Refs)
		}
	}
}
