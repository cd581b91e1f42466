package audit

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// Records appended from many goroutines (the endpoint serves requests concurrently)
// form one chain: every number once, in file order, and the trail verifies.
func TestAuditConcurrentAppendsFormOneChain(t *testing.T) {
	k := testkit.NewKey(t, "EdDSA")
	path := filepath.Join(t.TempDir(), "audit.log")
	sink, err := OpenFile(path, 16<<10*8, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(sink, fixedKey{k}, WithCheckpointInterval(time.Millisecond), WithWriter("tts-0"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := l.Append(&Entry{Decision: Issued, Txn: "t"}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(path + ".2*")
	rep := verifyFiles(t, verifiersOf(t, k), []string{path + CheckpointSuffix}, append(files, path)...)
	if !rep.OK() || rep.Records != 400 || rep.CheckpointsVerified == 0 {
		t.Fatalf("report %+v", rep)
	}
	if err := l.Append(&Entry{}); err == nil {
		t.Fatal("a closed log took a record")
	}
}
