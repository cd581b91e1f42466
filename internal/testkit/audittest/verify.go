package audittest

import (
	"bytes"
	"os"
	"testing"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// VerifiedFile is the records of the trail file at path, after audit.Verify accepted
// it with k's public key and verified at least one checkpoint: the test fails
// otherwise.
func VerifiedFile(t testing.TB, path string, k *keys.PrivateKey) []audit.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := audit.Verifiers([]*keys.PublicKey{k.Public()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify([]audit.Input{{Name: path, R: bytes.NewReader(b)}}, nil, vs)
	if err != nil || !rep.OK() || rep.CheckpointsVerified == 0 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	var out []audit.Entry
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if e, err := audit.ParseRecord(line); err == nil {
			out = append(out, e)
		}
	}
	return out
}
