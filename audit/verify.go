package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/dialogtrust/dialogtrust/errcode"
	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
)

// Input is one file of the trail, in the order written (rotated files oldest first,
// the current file last).
type Input struct {
	Name string
	R    io.Reader
}

// Finding is one thing verification found wrong, with its stable code.
type Finding struct {
	Code   errcode.Code `json:"code"`
	File   string       `json:"file,omitempty"`
	Line   int          `json:"line,omitempty"`
	Writer string       `json:"writer,omitempty"`
	Seq    uint64       `json:"seq,omitempty"`
	Detail string       `json:"detail"`
}

func (f Finding) String() string {
	where := f.File
	if f.Line > 0 {
		where = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	if where != "" {
		where += ": "
	}
	return fmt.Sprintf("%s%s: %s", where, f.Code, f.Detail)
}

// Report is the outcome of Verify.
type Report struct {
	Records     int `json:"records"`
	Checkpoints int `json:"checkpoints"`
	Writers     int `json:"writers"`
	// CheckpointsVerified counts the checkpoints whose tree head was recomputed from
	// the records and matched.
	CheckpointsVerified int `json:"checkpoints_verified"`
	// SignaturesChecked is false when no keys were given: tree heads were compared,
	// signatures were not.
	SignaturesChecked bool      `json:"signatures_checked"`
	Findings          []Finding `json:"findings"`
}

// OK reports whether nothing was found.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

type pos struct {
	file string
	num  int
}

type recLine struct {
	pos
	line
	leaf []byte // the RFC 6962 leaf hash: the tree's leaf, and what the next record names as prev
	// before is the hash of the record line before it in the inputs (nil for the first).
	before []byte
}

type cpLine struct {
	pos
	writer string
	cp     tlog.Checkpoint
	rng    [][]byte
}

// Verify reads the trail's files (and, in checkpoints, checkpoint lines kept apart:
// the .checkpoint file) and checks, per writer: the sequence (removed, reordered,
// inserted records), the chain of hashes (altered records), every checkpoint's
// signature (with vs; nil skips signatures) and tree head against the records, and
// that no checkpoint covers more records than the files hold (a tail cut). An error is
// returned only when an input cannot be read.
func Verify(inputs, checkpoints []Input, vs note.Verifiers) (*Report, error) {
	rep := &Report{SignaturesChecked: vs != nil}
	var recs []*recLine
	var cps []*cpLine
	var before []byte
	read := func(in Input, external bool) error {
		br := bufio.NewReaderSize(in.R, 64<<10)
		for n := 1; ; n++ {
			b, err := readLine(br)
			if errors.Is(err, io.EOF) && len(b) == 0 {
				return nil
			}
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errLong) {
				return fmt.Errorf("%s: %w", in.Name, err)
			}
			p := pos{in.Name, n}
			if len(bytes.TrimSpace(b)) == 0 && err == nil {
				continue
			}
			l, perr := parseLine(b)
			if errors.Is(err, errLong) {
				perr = fmt.Errorf("line over %d octets", MaxLine)
			}
			if perr != nil {
				rep.Findings = append(rep.Findings, Finding{Code: errcode.AuditRecordMalformed, File: p.file, Line: p.num, Detail: perr.Error()})
				continue
			}
			if !l.rec {
				c, f := openCheckpoint(p, l, vs)
				if f != nil {
					rep.Findings = append(rep.Findings, *f)
				}
				if c != nil {
					cps = append(cps, c)
				}
				continue
			}
			if external {
				rep.Findings = append(rep.Findings, Finding{Code: errcode.AuditRecordMalformed, File: p.file, Line: p.num, Detail: "a record in a checkpoint file"})
				continue
			}
			leaf := hasher.HashLeaf(b)
			recs = append(recs, &recLine{pos: p, line: l, leaf: leaf, before: before})
			before = leaf
		}
	}
	for _, in := range inputs {
		if err := read(in, false); err != nil {
			return nil, err
		}
	}
	for _, in := range checkpoints {
		if err := read(in, true); err != nil {
			return nil, err
		}
	}
	rep.Records, rep.Checkpoints = len(recs), len(cps)
	writers := map[string][]*recLine{}
	var order []string
	for _, r := range recs {
		if _, ok := writers[r.writer]; !ok {
			order = append(order, r.writer)
		}
		writers[r.writer] = append(writers[r.writer], r)
	}
	cpsOf := map[string][]*cpLine{}
	for _, c := range cps {
		if _, ok := writers[c.writer]; !ok {
			if _, seen := cpsOf[c.writer]; !seen {
				order = append(order, c.writer)
			}
		}
		cpsOf[c.writer] = append(cpsOf[c.writer], c)
	}
	rep.Writers = len(order)
	for _, w := range order {
		rep.Findings = append(rep.Findings, verifyWriter(rep, w, writers[w], cpsOf[w])...)
	}
	return rep, nil
}

var errLong = errors.New("line too long")

// readLine reads one line without its newline; a line over MaxLine is skipped to its
// end and reported as errLong.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLine+1 {
			buf = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			return buf[:len(buf)-1], nil
		}
		return buf, err
	}
}

// openCheckpoint checks a checkpoint line's signed note (with vs) and reads its body
// and compact range.
func openCheckpoint(p pos, l line, vs note.Verifiers) (*cpLine, *Finding) {
	bad := func(code errcode.Code, format string, args ...any) (*cpLine, *Finding) {
		return nil, &Finding{Code: code, File: p.file, Line: p.num, Writer: l.writer, Detail: fmt.Sprintf(format, args...)}
	}
	msg := []byte(l.note)
	var text string
	if vs != nil {
		n, err := note.Open(msg, vs)
		if err != nil {
			return bad(errcode.AuditCheckpointSignature, "the checkpoint's signature does not verify with the given keys: %v", err)
		}
		text = n.Text
	} else {
		n, err := note.Open(msg, note.VerifierList())
		var unverified *note.UnverifiedNoteError
		if !errors.As(err, &unverified) {
			return bad(errcode.AuditRecordMalformed, "not a signed note: %v", err)
		}
		text = unverified.Note.Text
		_ = n
	}
	var c tlog.Checkpoint
	if _, err := c.Unmarshal([]byte(text)); err != nil {
		return bad(errcode.AuditRecordMalformed, "not a checkpoint: %v", err)
	}
	if c.Origin != OriginPrefix+l.writer {
		return bad(errcode.AuditCheckpointMismatch, "the checkpoint's origin %q is not writer %s's", c.Origin, l.writer)
	}
	out := &cpLine{pos: p, writer: l.writer, cp: c}
	if len(l.rng) > 0 {
		for _, s := range l.rng {
			h, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(h) != sha256.Size {
				return bad(errcode.AuditRecordMalformed, "the checkpoint's compact range holds a bad hash")
			}
			out.rng = append(out.rng, h)
		}
		r, err := rangeFactory.NewRange(0, c.Size, out.rng)
		if err != nil {
			return bad(errcode.AuditRecordMalformed, "the checkpoint's compact range: %v", err)
		}
		root, err := r.GetRootHash(nil)
		if err != nil || !bytes.Equal(root, c.Hash) {
			return bad(errcode.AuditCheckpointMismatch, "the checkpoint's compact range is not its signed tree head")
		}
	}
	return out, nil
}

// verifyWriter checks one writer's records (in input order) and checkpoints.
func verifyWriter(rep *Report, w string, recs []*recLine, cps []*cpLine) []Finding {
	var out []Finding
	find := func(code errcode.Code, p pos, seq uint64, format string, args ...any) {
		out = append(out, Finding{Code: code, File: p.file, Line: p.num, Writer: w, Seq: seq, Detail: fmt.Sprintf(format, args...)})
	}
	// Sequence: inserted (a repeated number), reordered (a number below the last),
	// removed (a number skipped).
	// Of records repeating a number, the one the next record names is the writer's;
	// the others were inserted.
	group := map[uint64][]*recLine{}
	for _, r := range recs {
		group[r.seq] = append(group[r.seq], r)
	}
	genuine := map[uint64]*recLine{}
	for seq, g := range group {
		genuine[seq] = g[0]
		if len(g) == 1 {
			continue
		}
		for _, r := range g {
			for _, n := range group[seq+1] {
				if n.prev == hex.EncodeToString(r.leaf) {
					genuine[seq] = r
				}
			}
		}
	}
	var last uint64
	var inOrder []*recLine // the writer's records, in input order
	for _, r := range recs {
		if genuine[r.seq] != r {
			g := genuine[r.seq]
			find(errcode.AuditRecordInserted, r.pos, r.seq, "writer %s's record %d appears twice (the other at %s:%d): one was inserted", w, r.seq, g.file, g.num)
			continue
		}
		inOrder = append(inOrder, r)
		if len(inOrder) > 1 && r.seq < last {
			find(errcode.AuditRecordReordered, r.pos, r.seq, "writer %s's record %d comes after record %d", w, r.seq, last)
		}
		last = max(last, r.seq)
	}
	sorted := slices.Clone(inOrder)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].seq < sorted[j].seq })
	for i := 1; i < len(sorted); i++ {
		if gap := sorted[i].seq - sorted[i-1].seq; gap > 1 {
			find(errcode.AuditRecordRemoved, sorted[i].pos, sorted[i].seq, "writer %s's records %d to %d are missing", w, sorted[i-1].seq+1, sorted[i].seq-1)
		}
	}
	// Chain: each record names the hash of the one before it.
	for i, r := range inOrder {
		switch {
		case i == 0 && r.seq == 1:
			if r.prev != "" && r.before != nil && r.prev != hex.EncodeToString(r.before) {
				find(errcode.AuditRecordAltered, r.pos, r.seq, "writer %s's first record names a record before it that is not the record before it in the files (edited or removed)", w)
			}
		case i > 0 && inOrder[i-1].seq+1 == r.seq:
			if r.prev != hex.EncodeToString(inOrder[i-1].leaf) {
				find(errcode.AuditRecordAltered, inOrder[i-1].pos, inOrder[i-1].seq, "writer %s's record %d is not the record %d names as its predecessor: it was edited", w, inOrder[i-1].seq, r.seq)
			}
		}
	}
	// Checkpoints: each tree head against the records, signed order by size.
	sort.SliceStable(cps, func(i, j int) bool { return cps[i].cp.Size < cps[j].cp.Size })
	var held uint64
	if len(sorted) > 0 {
		held = sorted[len(sorted)-1].seq
	}
	// The tree starts at record 1, or from the compact range of a checkpoint at the
	// number just before the first record held (the files before it rotated away).
	var tree *compact.Range
	var next uint64 = 1
	if len(sorted) == 0 || sorted[0].seq == 1 {
		tree = rangeFactory.NewEmptyRange(0)
	} else {
		for _, c := range cps {
			if c.cp.Size == sorted[0].seq-1 && c.rng != nil {
				tree, _ = rangeFactory.NewRange(0, c.cp.Size, c.rng)
				next = sorted[0].seq
				break
			}
		}
		if tree == nil {
			// A writer starts at 1, and a rotated file opens with the checkpoint of
			// the records before it: without either, the head was cut.
			find(errcode.AuditRecordRemoved, sorted[0].pos, sorted[0].seq, "writer %s's records start at %d, and no checkpoint of the %d before them opens the files: records 1 to %d were removed (or give the older files too)",
				w, sorted[0].seq, sorted[0].seq-1, sorted[0].seq-1)
		}
	}
	byseq := map[uint64]*recLine{}
	for _, r := range sorted {
		byseq[r.seq] = r
	}
	for _, c := range cps {
		if c.cp.Size > held {
			find(errcode.AuditTruncated, c.pos, c.cp.Size, "a checkpoint of writer %s covers %d records, the files hold %d: the tail was cut", w, c.cp.Size, held)
			continue
		}
		if tree == nil || c.cp.Size < next-1 {
			continue // before the records held: nothing to recompute it from
		}
		complete := true
		for ; next <= c.cp.Size; next++ {
			r := byseq[next]
			if r == nil {
				complete = false
				break
			}
			_ = tree.Append(r.leaf, nil)
		}
		if !complete {
			find(errcode.AuditCheckpointMismatch, c.pos, c.cp.Size, "writer %s's checkpoint at %d cannot be recomputed: records are missing", w, c.cp.Size)
			tree = nil
			continue
		}
		root, err := tree.GetRootHash(nil)
		if err != nil || !bytes.Equal(root, c.cp.Hash) {
			find(errcode.AuditCheckpointMismatch, c.pos, c.cp.Size, "writer %s's checkpoint at %d is not the tree head of the records up to it: records it covers were changed", w, c.cp.Size)
			tree = nil
			continue
		}
		rep.CheckpointsVerified++
	}
	return out
}
