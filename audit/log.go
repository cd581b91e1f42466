package audit

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// OriginPrefix begins every checkpoint's origin; the writer's id follows, so that a
// checkpoint names the one chain it covers.
const OriginPrefix = "dialogtrust-audit/"

// DefaultCheckpointInterval is how often a writer checkpoints when records come.
const DefaultCheckpointInterval = time.Minute

// KeySource gives the key that signs checkpoints: the service's active signing key
// (a *keys.Ring), read at each checkpoint so that a rotation is followed.
type KeySource interface {
	Active() *keys.PrivateKey
}

// Sink is where a Log writes its lines: each call one whole line ending in '\n'. A Sink
// that returns an error wrote nothing the Log counts; the Log keeps its chain where it
// was.
type Sink interface {
	Write(line []byte) error
}

// A Sink may also implement these.
type (
	// anchorer gives the hex SHA-256 of the last record line the sink already holds
	// (an existing file), which the writer's first record names as prev.
	anchorer interface{ Anchor() string }
	// rotator starts a new file when a line would take it past its size.
	rotator interface {
		Full(n int) bool
		Rotate() error
	}
	// keeper keeps the latest checkpoint line apart from the records (the .checkpoint
	// file beside a log file), so that cutting the log's tail is found.
	keeper interface{ KeepCheckpoint(line []byte) error }
	closer interface{ Close() error }
)

// Option configures a Log.
type Option func(*Log)

// WithClock sets the clock of record times and checkpoint intervals.
func WithClock(now func() time.Time) Option { return func(l *Log) { l.now = now } }

// WithWriter sets the writer id (default 16 random hex digits); it must be a valid
// note origin component (no spaces, no '+').
func WithWriter(id string) Option { return func(l *Log) { l.writer = id } }

// WithCheckpointInterval sets how long records may go without a checkpoint (default
// DefaultCheckpointInterval); a checkpoint is appended after the first record written
// once the interval has passed, at rotation, and at Close.
func WithCheckpointInterval(d time.Duration) Option { return func(l *Log) { l.interval = d } }

// WithLogger sets where a failed write is reported (default slog.Default()).
func WithLogger(lg *slog.Logger) Option { return func(l *Log) { l.logger = lg } }

// Log is one writer of the trail: it appends records chained to each other and
// checkpoints. It is safe for concurrent use; records are written in sequence order,
// one at a time, or over a BatchSink in groups (batch.go).
type Log struct {
	mu       sync.Mutex
	sink     Sink
	keys     KeySource
	now      func() time.Time
	logger   *slog.Logger
	writer   string
	origin   string
	interval time.Duration

	seq    uint64
	prev   string
	tree   *compact.Range
	lastCP time.Time
	cpSize uint64
	closed bool
	// lastNote is the signed note of the latest checkpoint written, pendingNote that
	// of the checkpoint line being written (head.go).
	lastNote, pendingNote []byte

	// The group commit's groups waiting for their turn (batch.go), for a BatchSink;
	// writing while one has it.
	qmu     sync.Mutex
	groups  []*group
	writing bool
}

var hasher = rfc6962.DefaultHasher

// timeFormat is the format of a record's time.
const timeFormat = time.RFC3339Nano

var rangeFactory = &compact.RangeFactory{Hash: hasher.HashChildren}

// New opens a writer on sink, signing checkpoints with ks's active key.
func New(sink Sink, ks KeySource, opts ...Option) (*Log, error) {
	if sink == nil || ks == nil {
		return nil, errors.New("audit: a sink and a signing key are required")
	}
	l := &Log{sink: sink, keys: ks, now: time.Now, interval: DefaultCheckpointInterval, tree: rangeFactory.NewEmptyRange(0)}
	for _, o := range opts {
		o(l)
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	if l.writer == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		l.writer = hex.EncodeToString(b[:])
	}
	l.origin = OriginPrefix + l.writer
	if _, err := noteName(l.writer); err != nil {
		return nil, fmt.Errorf("audit: writer id %q: no spaces or '+'", l.writer)
	}
	if ks.Active() == nil {
		return nil, errors.New("audit: no active signing key")
	}
	if _, err := NoteSigner(ks.Active()); err != nil {
		return nil, err
	}
	if a, ok := sink.(anchorer); ok {
		l.prev = a.Anchor()
	}
	l.lastCP = l.now()
	return l, nil
}

// Writer returns the writer id; Origin the origin of its checkpoints.
func (l *Log) Writer() string { return l.writer }

// Origin returns the origin its checkpoints name.
func (l *Log) Origin() string { return l.origin }

// Audit implements oauth.Auditor: the entry of rec, appended. A failure is logged
// (with the record's hashes, never a token) and returned: the endpoint then refuses
// the issuance.
func (l *Log) Audit(rec *oauth.Record) error {
	e := FromRecord(rec, l.now())
	err := l.Append(&e)
	if err != nil {
		l.logger.Error("audit record not written", "error", err, "decision", e.Decision, "code", e.Code, "request_id", e.RequestID,
			"txn", e.Txn, "dlg", e.Dialog, "requester", e.Requester, "issued_token_sha256", e.IssuedSHA256)
	}
	return err
}

// Append writes e as the writer's next record (setting V, Writer, Seq and Prev), then a
// checkpoint when the interval has passed. It returns an error only when the record
// was not written; a checkpoint that fails is logged, and tried again at the next
// record.
func (l *Log) Append(e *Entry) error {
	if bs, ok := l.sink.(BatchSink); ok {
		return l.appendBatched(bs, e)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("audit: log closed")
	}
	e.V, e.Writer, e.Seq, e.Prev = Version, l.writer, l.seq+1, l.prev
	if e.Time == "" {
		e.Time = l.now().UTC().Format(timeFormat)
	}
	line := append(e.AppendJSON(make([]byte, 0, 768)), '\n')
	if r, ok := l.sink.(rotator); ok && r.Full(len(line)) {
		if err := l.rotateLocked(r); err != nil {
			return err
		}
	}
	if err := l.sink.Write(line); err != nil {
		return err
	}
	// One hash per record: the RFC 6962 leaf hash is both the tree's leaf and what the
	// next record names as prev.
	leaf := hasher.HashLeaf(line[:len(line)-1])
	l.seq, l.prev = e.Seq, hex.EncodeToString(leaf)
	if err := l.tree.Append(leaf, nil); err != nil {
		return err
	}
	l.maybeCheckpointLocked()
	return nil
}

// maybeCheckpointLocked appends a checkpoint when the interval has passed; a failure
// is logged, and tried again at the next record.
func (l *Log) maybeCheckpointLocked() {
	if l.now().Sub(l.lastCP) >= l.interval {
		if err := l.checkpointLocked(); err != nil {
			l.logger.Error("audit checkpoint not written", "error", err, "writer", l.writer, "size", l.seq)
		}
	}
}

// rotateLocked ends the full file with a checkpoint, starts the next, and opens it
// with the same checkpoint line, so that the newer file can be verified without the
// older one.
func (l *Log) rotateLocked(r rotator) error {
	line, err := l.checkpointLineLocked()
	if err != nil {
		return err
	}
	if line != nil {
		if err := l.writeCheckpointLocked(line); err != nil {
			return err
		}
	}
	if err := r.Rotate(); err != nil {
		return err
	}
	if line != nil {
		return l.sink.Write(line)
	}
	return nil
}

// Checkpoint appends a checkpoint now, if records came since the last one.
func (l *Log) Checkpoint() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checkpointLocked()
}

func (l *Log) checkpointLocked() error {
	if l.seq == l.cpSize {
		l.lastCP = l.now()
		return nil
	}
	line, err := l.checkpointLineLocked()
	if err != nil {
		return err
	}
	return l.writeCheckpointLocked(line)
}

func (l *Log) writeCheckpointLocked(line []byte) error {
	if err := l.sink.Write(line); err != nil {
		return err
	}
	if k, ok := l.sink.(keeper); ok {
		if err := k.KeepCheckpoint(line); err != nil {
			return err
		}
	}
	l.cpSize, l.lastCP, l.lastNote = l.seq, l.now(), l.pendingNote
	return nil
}

// checkpointLine is a checkpoint as a line of the trail: the signed note (whose text
// is the checkpoint body: origin, size, root) and the compact range of the tree at
// that size (its root is the note's root), from which a verifier given only newer
// files goes on.
type checkpointLine struct {
	V          int      `json:"v"`
	Writer     string   `json:"w"`
	Checkpoint string   `json:"checkpoint"`
	Range      []string `json:"range,omitempty"`
}

// checkpointLineLocked signs the tree head over the records so far (nil when there
// are none).
func (l *Log) checkpointLineLocked() ([]byte, error) {
	if l.seq == 0 {
		return nil, nil
	}
	root, err := l.tree.GetRootHash(nil)
	if err != nil {
		return nil, err
	}
	signer, err := NoteSigner(l.keys.Active())
	if err != nil {
		return nil, err
	}
	body := tlog.Checkpoint{Origin: l.origin, Size: l.seq, Hash: root}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(body)}, signer)
	if err != nil {
		return nil, err
	}
	l.pendingNote = signed
	cl := checkpointLine{V: Version, Writer: l.writer, Checkpoint: string(signed)}
	for _, h := range l.tree.Hashes() {
		cl.Range = append(cl.Range, base64.StdEncoding.EncodeToString(h))
	}
	b, err := json.Marshal(cl)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Close writes a last checkpoint and closes the sink when it can be closed.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.checkpointLocked()
	if c, ok := l.sink.(closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// FixedKey is the KeySource of one key that does not rotate (an ingress's key file, a
// test's key).
func FixedKey(k *keys.PrivateKey) KeySource { return fixedKey{k} }

type fixedKey struct{ k *keys.PrivateKey }

func (f fixedKey) Active() *keys.PrivateKey { return f.k }
