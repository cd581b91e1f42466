package chaining

import (
	"fmt"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Subject mapping modes (oauth.md 2.5: both ASes may map subject identifiers).
const (
	// SubjectKeep passes sub unchanged (the default).
	SubjectKeep = "keep"
	// SubjectPrefix puts Prefix before sub, so that subjects of a peer domain cannot
	// collide with local ones (a Txn-Token sub must name one principal in its trust
	// domain, oauth.md 1.5 step 5).
	SubjectPrefix = "prefix"
	// SubjectTable maps each sub through Table; a sub the table does not name is
	// refused (subject_not_mapped), never passed through.
	SubjectTable = "table"
)

// maxSubject bounds a sub before and after mapping.
const maxSubject = 1 << 10

// SubjectMap is the subject policy for one peer.
type SubjectMap struct {
	Mode   string
	Prefix string
	Table  map[string]string
}

// Check reports a subject policy that cannot work: an unknown mode, a prefix without
// mode prefix, a table without mode table, empty table entries.
func (m *SubjectMap) Check() error {
	switch m.Mode {
	case "", SubjectKeep:
		if m.Prefix != "" || len(m.Table) > 0 {
			return fmt.Errorf("subject mode keep takes no prefix or table")
		}
	case SubjectPrefix:
		if m.Prefix == "" || len(m.Table) > 0 {
			return fmt.Errorf("subject mode prefix needs a prefix and no table")
		}
	case SubjectTable:
		if len(m.Table) == 0 || m.Prefix != "" {
			return fmt.Errorf("subject mode table needs a table and no prefix")
		}
		for from, to := range m.Table {
			if from == "" || to == "" {
				return fmt.Errorf("subject table: empty subject")
			}
		}
	default:
		return fmt.Errorf("subject mode %q: keep, prefix or table", m.Mode)
	}
	return nil
}

// Map applies the policy to sub. An empty or unmapped subject is subject_not_mapped.
func (m *SubjectMap) Map(sub string) (string, error) {
	if sub == "" {
		return "", errcode.New(errcode.MissingClaim, "no subject to map")
	}
	var out string
	switch m.Mode {
	case "", SubjectKeep:
		out = sub
	case SubjectPrefix:
		out = m.Prefix + sub
	case SubjectTable:
		v, ok := m.Table[sub]
		if !ok {
			return "", errcode.New(errcode.SubjectNotMapped, "the subject policy has no mapping for this subject")
		}
		out = v
	default:
		return "", errcode.New(errcode.Internal, "subject mode %q", m.Mode)
	}
	if len(out) > maxSubject || strings.ContainsAny(out, "\x00") {
		return "", errcode.New(errcode.SubjectNotMapped, "the mapped subject is not usable")
	}
	return out, nil
}
