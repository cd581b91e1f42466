package audit

import (
	"encoding/hex"
	"errors"
)

// BatchSink is a Sink that takes several lines in one write, all or none: a Redis
// stream (one XADD per batch, cmd/internal/kit), where each write is a network round
// trip. A Log over a BatchSink commits records in groups: a record appended while
// another write is under way waits in a queue, and the next write takes everything
// queued (up to MaxBatch records), so concurrent requests share one round trip. There
// is no timer: a lone record is written at once, alone. Each Append returns only when
// the write that carried its record returned: nil when the sink took the batch, its
// error when not (the batch is then not counted, and the chain goes on from the last
// record the sink took, as after a failed Write).
type BatchSink interface {
	Sink
	// WriteBatch writes lines (each a whole line ending in '\n', in chain order) in
	// one write; an error means none of them is counted.
	WriteBatch(lines [][]byte) error
}

// MaxBatch bounds the records of one group commit (so a batch is at most MaxBatch ×
// MaxLine octets); more waiting records go in the next write.
const MaxBatch = 64

// group is the records of one group commit: made by the first Append that finds no
// open group (its leader), joined by those that come before the leader takes it (at
// most MaxBatch). turn is closed when the group before it is written (at once when
// none is under way); done when it is written, err its result.
type group struct {
	recs []*Entry
	turn chan struct{}
	done chan struct{}
	err  error
}

// appendBatched adds e to the open group and returns once the group is written. The
// group's leader waits for its turn, takes the group (closing it to others), writes
// it, wakes its members, and gives the next group its turn: groups are written one at
// a time in the order they were made, records in the order they joined, so the
// chain's order is the sink's. No timer: a record that finds nothing being written
// goes at once, alone.
func (l *Log) appendBatched(bs BatchSink, e *Entry) error {
	l.qmu.Lock()
	var g *group
	if n := len(l.groups); n > 0 && len(l.groups[n-1].recs) < MaxBatch {
		g = l.groups[n-1]
		g.recs = append(g.recs, e)
		l.qmu.Unlock()
		<-g.done
		return g.err
	}
	g = &group{recs: []*Entry{e}, turn: make(chan struct{}), done: make(chan struct{})}
	l.groups = append(l.groups, g)
	if !l.writing {
		l.writing = true
		close(g.turn)
	}
	l.qmu.Unlock()
	<-g.turn
	l.qmu.Lock()
	rest := copy(l.groups, l.groups[1:]) // g is the first: turns go in order
	l.groups[rest] = nil
	l.groups = l.groups[:rest]
	recs := g.recs
	l.qmu.Unlock()
	l.mu.Lock()
	g.err = l.writeBatchLocked(bs, recs)
	l.mu.Unlock()
	close(g.done)
	l.qmu.Lock()
	if len(l.groups) > 0 {
		close(l.groups[0].turn)
	} else {
		l.writing = false
	}
	l.qmu.Unlock()
	return g.err
}

// writeBatchLocked chains batch's records after the writer's last, writes them in one
// WriteBatch, and counts them only when it succeeded.
func (l *Log) writeBatchLocked(bs BatchSink, batch []*Entry) error {
	if l.closed {
		return errors.New("audit: log closed")
	}
	lines := make([][]byte, len(batch))
	leaves := make([][]byte, len(batch))
	seq, prev, size := l.seq, l.prev, 0
	for i, e := range batch {
		e.V, e.Writer, e.Seq, e.Prev = Version, l.writer, seq+1, prev
		if e.Time == "" {
			e.Time = l.now().UTC().Format(timeFormat)
		}
		lines[i] = append(e.AppendJSON(make([]byte, 0, 768)), '\n')
		leaves[i] = hasher.HashLeaf(lines[i][:len(lines[i])-1])
		seq, prev, size = e.Seq, hex.EncodeToString(leaves[i]), size+len(lines[i])
	}
	if r, ok := l.sink.(rotator); ok && r.Full(size) {
		if err := l.rotateLocked(r); err != nil {
			return err
		}
	}
	if err := bs.WriteBatch(lines); err != nil {
		return err
	}
	l.seq, l.prev = seq, prev
	for _, leaf := range leaves {
		if err := l.tree.Append(leaf, nil); err != nil {
			return err
		}
	}
	l.maybeCheckpointLocked()
	return nil
}

// Waiting is the number of records waiting for a group commit (a gauge of the sink's
// backlog): 0 when nothing is queued behind the write under way.
func (l *Log) Waiting() int {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	n := 0
	for _, g := range l.groups {
		n += len(g.recs)
	}
	return n
}
