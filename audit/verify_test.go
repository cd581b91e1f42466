package audit

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

func TestAuditVerifyIntactTrail(t *testing.T) {
	for _, alg := range []string{"ES256", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			k := testkit.NewKey(t, alg)
			path := trail(t, t.TempDir(), k, 20)
			rep := verifyFiles(t, verifiersOf(t, k), []string{path + CheckpointSuffix}, path)
			if !rep.OK() || rep.Records != 20 || rep.Checkpoints < 3 || !rep.SignaturesChecked {
				t.Fatalf("report %+v", rep)
			}
			if rep.CheckpointsVerified != rep.Checkpoints {
				t.Fatalf("%d of %d checkpoints verified", rep.CheckpointsVerified, rep.Checkpoints)
			}
		})
	}
}

// tampered writes a trail of ten records signed by a fresh key, lets edit change its
// lines (ri: the indexes of the record lines) and verifies what edit returns, without
// kept checkpoints.
func tampered(t *testing.T, edit func(ls [][]byte, ri []int) [][]byte) *Report {
	t.Helper()
	k := testkit.NewKey(t, "ES256")
	path := trail(t, t.TempDir(), k, 10)
	ls := lines(t, path)
	writeLines(t, path, edit(ls, recordIndexes(ls)))
	return verifyFiles(t, verifiersOf(t, k), nil, path)
}

// Issue 26 acceptance: each kind of tampering found by `audit verify`.
func TestAuditVerifyFindsRemovedRecord(t *testing.T) {
	rep := tampered(t, func(ls [][]byte, ri []int) [][]byte {
		return slices.Delete(ls, ri[4], ri[4]+1)
	})
	wantFinding(t, rep, errcode.AuditRecordRemoved)
	if slices.Contains(codes(rep), errcode.AuditRecordAltered) {
		t.Fatalf("a removal reported as an alteration: %v", rep.Findings)
	}
}

func TestAuditVerifyFindsAlteredRecord(t *testing.T) {
	rep := tampered(t, func(ls [][]byte, ri []int) [][]byte {
		ls[ri[3]] = bytes.Replace(ls[ri[3]], []byte(`"decision":"issued"`), []byte(`"decision":"refused"`), 1)
		return ls
	})
	wantFinding(t, rep, errcode.AuditRecordAltered)
	if f := rep.Findings[0]; f.Seq != 4 {
		t.Fatalf("finding names record %d, want 4: %v", f.Seq, rep.Findings)
	}
}

// An attacker who edits a record and recomputes the chain after it is found by the
// signed checkpoints, which only the service's key makes.
func TestAuditVerifyFindsAlteredRecordWithRecomputedChain(t *testing.T) {
	rep := tampered(t, func(ls [][]byte, ri []int) [][]byte {
		ls[ri[1]] = bytes.Replace(ls[ri[1]], []byte(`"decision":"issued"`), []byte(`"decision":"refused"`), 1)
		rechain(t, ls, ri)
		return ls
	})
	if slices.Contains(codes(rep), errcode.AuditRecordAltered) {
		t.Fatalf("the chain was recomputed, yet found altered: %v", rep.Findings)
	}
	wantFinding(t, rep, errcode.AuditCheckpointMismatch)
}

// rechain rewrites every record's prev as the hash of the record before it.
func rechain(t *testing.T, ls [][]byte, ri []int) {
	for j := 1; j < len(ri); j++ {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(ls[ri[j]]))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		m["prev"] = hex.EncodeToString(hasher.HashLeaf(ls[ri[j-1]]))
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		ls[ri[j]] = b
	}
}

func TestAuditVerifyFindsReorderedRecords(t *testing.T) {
	rep := tampered(t, func(ls [][]byte, ri []int) [][]byte {
		ls[ri[5]], ls[ri[6]] = ls[ri[6]], ls[ri[5]]
		return ls
	})
	wantFinding(t, rep, errcode.AuditRecordReordered)
	for _, c := range codes(rep) {
		if c != errcode.AuditRecordReordered {
			t.Fatalf("a reordering reported as %s: %v", c, rep.Findings)
		}
	}
}

func TestAuditVerifyFindsInsertedRecord(t *testing.T) {
	at := 0 // the forged line's index
	rep := tampered(t, func(ls [][]byte, ri []int) [][]byte {
		// A forged record 5 that names record 4 correctly, put before the real one.
		var m map[string]any
		if err := json.Unmarshal(ls[ri[4]], &m); err != nil {
			t.Fatal(err)
		}
		m["txn"], m["decision"] = "forged", "issued"
		forged, _ := json.Marshal(m)
		at = ri[4]
		return slices.Insert(ls, at, forged)
	})
	wantFinding(t, rep, errcode.AuditRecordInserted)
	if f := rep.Findings[0]; f.Line != at+1 || f.Code != errcode.AuditRecordInserted {
		t.Fatalf("first finding %v, want the forged line %d", f, at+1)
	}
}

func TestAuditVerifyFindsTailCutAfterCheckpoint(t *testing.T) {
	k := testkit.NewKey(t, "ES256")
	path := trail(t, t.TempDir(), k, 10)
	ls := lines(t, path)
	ri := recordIndexes(ls)
	writeLines(t, path, ls[:ri[6]]) // records 7 to 10 and the checkpoints after them cut
	if rep := verifyFiles(t, verifiersOf(t, k), nil, path); !rep.OK() {
		t.Fatalf("without the kept checkpoint a clean cut is a shorter trail: %v", rep.Findings)
	}
	rep := verifyFiles(t, verifiersOf(t, k), []string{path + CheckpointSuffix}, path)
	wantFinding(t, rep, errcode.AuditTruncated)
}

func TestAuditVerifyFindsForgedCheckpoint(t *testing.T) {
	k, other := testkit.NewKey(t, "ES256"), testkit.NewKey(t, "ES256")
	path := trail(t, t.TempDir(), other, 10)
	rep := verifyFiles(t, verifiersOf(t, k), nil, path)
	wantFinding(t, rep, errcode.AuditCheckpointSignature)
	// Without keys, tree heads are still compared, and the report says signatures were not.
	rep = verifyFiles(t, nil, nil, path)
	if !rep.OK() || rep.SignaturesChecked || rep.CheckpointsVerified == 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestAuditVerifyFindsMalformedLine(t *testing.T) {
	k := testkit.NewKey(t, "ES256")
	path := trail(t, t.TempDir(), k, 3)
	ls := append(lines(t, path), []byte(`{"v":1,"w":"tts-0"}`), bytes.Repeat([]byte("x"), MaxLine+10))
	writeLines(t, path, ls)
	rep := verifyFiles(t, verifiersOf(t, k), nil, path)
	if n := len(rep.Findings); n != 2 || rep.Findings[0].Code != errcode.AuditRecordMalformed || rep.Findings[1].Code != errcode.AuditRecordMalformed {
		t.Fatalf("findings %v", rep.Findings)
	}
}

func TestAuditRotationKeepsChain(t *testing.T) {
	k := testkit.NewKey(t, "ES256")
	dir := t.TempDir()
	path := trail(t, dir, k, 40, func(l *Log) {
		l.sink.(*FileSink).maxSize = 2048
	})
	rotated, _ := filepath.Glob(path + ".2*")
	if len(rotated) < 2 {
		t.Fatalf("rotated files %v", rotated)
	}
	all := append(rotated, path)
	rep := verifyFiles(t, verifiersOf(t, k), []string{path + CheckpointSuffix}, all...)
	if !rep.OK() || rep.Records != 40 {
		t.Fatalf("report %+v", rep)
	}
	// The newest file alone verifies from the checkpoint that opens it.
	rep = verifyFiles(t, verifiersOf(t, k), []string{path + CheckpointSuffix}, path)
	if !rep.OK() || rep.CheckpointsVerified == 0 {
		t.Fatalf("report %+v", rep)
	}
	// The newest file with its opening checkpoint and first record cut is found.
	ls := lines(t, path)
	writeLines(t, path, ls[2:])
	rep = verifyFiles(t, verifiersOf(t, k), nil, path)
	wantFinding(t, rep, errcode.AuditRecordRemoved)
	writeLines(t, path, ls)
	// A rotated file dropped from the middle is found.
	rep = verifyFiles(t, verifiersOf(t, k), nil, append(slices.Delete(slices.Clone(rotated), 1, 2), path)...)
	wantFinding(t, rep, errcode.AuditRecordRemoved)
}

func TestAuditRestartAnchorsToLastRecord(t *testing.T) {
	k := testkit.NewKey(t, "ES256")
	dir := t.TempDir()
	path := trail(t, dir, k, 5)
	trail(t, dir, k, 5, WithWriter("tts-1"))
	rep := verifyFiles(t, verifiersOf(t, k), nil, path)
	if !rep.OK() || rep.Writers != 2 {
		t.Fatalf("report %+v", rep)
	}
	// The first writer's last record cut: the second writer's first record finds it.
	ls := lines(t, path)
	ri := recordIndexes(ls)
	writeLines(t, path, slices.Delete(ls, ri[4], ri[4]+1))
	rep = verifyFiles(t, verifiersOf(t, k), nil, path)
	wantFinding(t, rep, errcode.AuditRecordAltered)
}
