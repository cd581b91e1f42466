package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// MaxLine bounds a line of the trail (a record or a checkpoint), in octets; a longer
// line is malformed. Records are a few hundred octets.
const MaxLine = 64 << 10

// maxRange bounds a checkpoint's compact range: at most one hash per bit of the size.
const maxRange = 64

// line is one parsed line: a record (rec) or a checkpoint.
type line struct {
	rec    bool
	writer string
	seq    uint64
	prev   string
	// checkpoint's signed note and compact range.
	note string
	rng  []string
}

type lineDoc struct {
	V          int      `json:"v"`
	Writer     string   `json:"w"`
	Seq        *uint64  `json:"seq"`
	Prev       *string  `json:"prev"`
	Checkpoint *string  `json:"checkpoint"`
	Range      []string `json:"range"`
}

// parseLine reads one line (without its newline): only what verification needs; the
// hash is over the line's octets as written.
func parseLine(b []byte) (line, error) {
	if len(b) > MaxLine {
		return line{}, fmt.Errorf("line over %d octets", MaxLine)
	}
	var d lineDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		return line{}, fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return line{}, errors.New("more than one JSON value")
	}
	if d.V != Version {
		return line{}, fmt.Errorf("version %d, want %d", d.V, Version)
	}
	if d.Writer == "" || len(d.Writer) > 128 || strings.ContainsAny(d.Writer, "+ \t\r\n") {
		return line{}, errors.New("no valid writer id (w)")
	}
	switch {
	case d.Checkpoint != nil && d.Seq == nil && d.Prev == nil:
		if len(d.Range) > maxRange {
			return line{}, errors.New("compact range too long")
		}
		return line{writer: d.Writer, note: *d.Checkpoint, rng: d.Range}, nil
	case d.Checkpoint == nil && d.Seq != nil && d.Prev != nil && *d.Seq > 0:
		if p := *d.Prev; p != "" && !isHexHash(p) {
			return line{}, errors.New("prev is not a hex SHA-256")
		}
		return line{rec: true, writer: d.Writer, seq: *d.Seq, prev: *d.Prev}, nil
	}
	return line{}, errors.New("neither a record (seq > 0, prev) nor a checkpoint")
}

func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseRecord reads one record line (without its newline) of a trail this project
// wrote, for readers of the trail such as the operator's page: exact member names, no
// member twice, at most MaxLine octets. A checkpoint line is refused; so is an unknown
// member, since a trail holds only what Entry names. It does not verify the chain:
// that is Verify's.
func ParseRecord(b []byte) (Entry, error) {
	var e Entry
	if len(b) > MaxLine {
		return e, fmt.Errorf("line over %d octets", MaxLine)
	}
	if _, err := netjson.DecodeOnlyKnown(b, &e); err != nil {
		return Entry{}, err
	}
	if e.V != Version || e.Writer == "" || e.Seq == 0 || e.Decision == "" {
		return Entry{}, errors.New("not a record of this trail (v, w, seq, decision)")
	}
	return e, nil
}
