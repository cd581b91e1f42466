package audit

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// memBatchSink is a BatchSink in memory: a batch is taken whole (its lines appended to
// buf) or refused whole, as one XADD is. gate, when set, holds the next write until
// it is closed; refuse refuses the write of that number (from 1).
type memBatchSink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	writes  int
	batches []int // the sizes of the batches taken
	gate    chan struct{}
	entered chan struct{}
	refuse  int
}

var errRefused = errors.New("refused")

func (s *memBatchSink) Write(line []byte) error { return s.WriteBatch([][]byte{line}) }

func (s *memBatchSink) WriteBatch(lines [][]byte) error {
	s.mu.Lock()
	gate, entered := s.gate, s.entered
	s.gate = nil
	s.writes++
	n := s.writes
	s.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.refuse {
		return errRefused
	}
	for _, l := range lines {
		s.buf.Write(l)
	}
	if !bytes.Contains(lines[0], []byte(`"checkpoint"`)) {
		s.batches = append(s.batches, len(lines))
	}
	return nil
}

func (s *memBatchSink) hold() (entered, release chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.entered = make(chan struct{}), make(chan struct{})
	return s.entered, s.gate
}

func newBatchLog(t *testing.T, s *memBatchSink) (*Log, *fixedKey) {
	t.Helper()
	k := fixedKey{testkit.NewKey(t, "EdDSA")}
	l, err := New(s, k, WithWriter("tts-0"), WithCheckpointInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return l, &k
}

// verifyMem closes l and verifies what s holds.
func verifyMem(t *testing.T, l *Log, k *fixedKey, s *memBatchSink) *Report {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify([]Input{{Name: "stream", R: bytes.NewReader(s.buf.Bytes())}}, nil, verifiersOf(t, k.k))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// appendWhileHeld appends one record (its write held in the sink), then n more from n
// goroutines, which wait behind it; it returns once all n are queued, and the
// results channel of the n.
func appendWhileHeld(t *testing.T, l *Log, s *memBatchSink, n int) (release chan struct{}, first, rest chan error) {
	t.Helper()
	entered, release := s.hold()
	first, rest = make(chan error, 1), make(chan error, n)
	go func() { first <- l.Append(&Entry{Decision: Issued, Txn: "first"}) }()
	<-entered
	for range n {
		go func() { rest <- l.Append(&Entry{Decision: Issued, Txn: "t"}) }()
	}
	for l.Waiting() < n {
		runtime.Gosched()
	}
	return release, first, rest
}

// Issue 26, group commit: a record appended while nothing is being written goes at
// once, alone (no timer holds it for company).
func TestIssue26GroupCommitLoneRecordGoesAtOnce(t *testing.T) {
	s := &memBatchSink{}
	l, k := newBatchLog(t, s)
	if err := l.Append(&Entry{Decision: Issued}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.batches, []int{1}) || l.Waiting() != 0 {
		t.Fatalf("batches %v, waiting %d", s.batches, l.Waiting())
	}
	if rep := verifyMem(t, l, k, s); !rep.OK() || rep.Records != 1 {
		t.Fatalf("%+v", rep)
	}
	if err := l.Append(&Entry{Decision: Issued}); err == nil {
		t.Fatal("a closed log took a record")
	}
}

// Records that come while a write is under way share the next write, in the order
// they came, and each Append returns only once its write is taken: the chain's order
// is the sink's, and the trail verifies.
func TestIssue26GroupCommitSharesOneWrite(t *testing.T) {
	s := &memBatchSink{}
	l, k := newBatchLog(t, s)
	release, first, rest := appendWhileHeld(t, l, s, 10)
	select {
	case err := <-rest:
		t.Fatalf("an Append returned (%v) before its record was written", err)
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := <-rest; err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(s.batches, []int{1, 10}) {
		t.Fatalf("batches %v, want [1 10]", s.batches)
	}
	if rep := verifyMem(t, l, k, s); !rep.OK() || rep.Records != 11 || rep.CheckpointsVerified != 1 {
		t.Fatalf("%+v", rep)
	}
}

// A batch the sink refused is refused to every record in it (each endpoint refuses
// its issuance), nothing of it is counted, and the chain goes on from the last record
// the sink took: the trail verifies without a finding.
func TestIssue26GroupCommitRefusedBatchRefusesEveryRecord(t *testing.T) {
	s := &memBatchSink{refuse: 2}
	l, k := newBatchLog(t, s)
	release, first, rest := appendWhileHeld(t, l, s, 10)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := <-rest; !errors.Is(err, errRefused) {
			t.Fatalf("a record of the refused batch: %v", err)
		}
	}
	e := &Entry{Decision: Issued}
	if err := l.Append(e); err != nil || e.Seq != 2 {
		t.Fatalf("the next record: %v, seq %d (want 2: the refused batch is not counted)", err, e.Seq)
	}
	if rep := verifyMem(t, l, k, s); !rep.OK() || rep.Records != 2 {
		t.Fatalf("%+v", rep)
	}
}

// More records waiting than a batch holds go in the following writes, none lost, none
// out of order; no write carries more than MaxBatch.
func TestIssue26GroupCommitBatchBounded(t *testing.T) {
	s := &memBatchSink{}
	l, k := newBatchLog(t, s)
	n := MaxBatch + MaxBatch/2
	release, first, rest := appendWhileHeld(t, l, s, n)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-rest; err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(s.batches, []int{1, MaxBatch, MaxBatch / 2}) {
		t.Fatalf("batches %v", s.batches)
	}
	if rep := verifyMem(t, l, k, s); !rep.OK() || rep.Records != n+1 {
		t.Fatalf("%+v", rep)
	}
}

// Many goroutines appending at once through group commits form one chain in the
// sink's order; a checkpoint now and then lands between batches.
func TestIssue26GroupCommitConcurrentAppendsFormOneChain(t *testing.T) {
	s := &memBatchSink{}
	k := fixedKey{testkit.NewKey(t, "ES256")}
	l, err := New(s, k, WithWriter("tts-0"), WithCheckpointInterval(time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 40 {
				if err := l.Append(&Entry{Decision: Issued, Txn: "t"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if rep := verifyMem(t, l, &k, s); !rep.OK() || rep.Records != 640 || rep.CheckpointsVerified < 2 {
		t.Fatalf("%+v", rep)
	}
}
