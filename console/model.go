package console

import (
	"slices"
	"sort"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// Bounds of what a page shows: the trail is read bounded too (Config.MaxRecords).
const (
	// MaxDialogID bounds the dialog id of a page's path, in octets: what a revocation's
	// id may be (a dialog id is at most 128; a trail record may hold a longer, refused
	// one).
	MaxDialogID = revoke.MaxIDLen
	maxDialogs  = 200 // dialogs listed on the index
	maxRows     = 300 // records of one dialog drawn and listed
	maxNodes    = 12  // workloads drawn; the rest share one column
	maxListed   = 16  // workloads, domains and linked dialogs listed per dialog on the index
	maxLinked   = 200 // dialogs linked from and to one dialog, listed on its page
)

// Summary is one dialog on the index.
type Summary struct {
	ID                         string
	First, Last                string
	last                       time.Time
	Issued, Refused, Accepted  int
	Workloads, Domains, Linked []string
	// MoreWorkloads and MoreLinked count what the lists leave out (maxListed).
	MoreWorkloads, MoreLinked int
	Revoked                   bool
}

// Row is one record of a dialog, as the page lists and draws it.
type Row struct {
	N                    int
	Time, Handler        string
	Decision, Code       string
	From                 string
	To                   []string
	Scopes               []string
	Op, Hop, Txn, Rule   string
	Issued, Subject      string // token SHA-256 prefixes
	LinkedFrom           string
	TargetKind, Target   string
	Reason               string
	Revocation, Endpoint bool // a revocation record; a token endpoint's record
}

// TokenLink joins two records: the token issued at one is the subject of the other (a
// grant presented at the peer authorization server, a Txn-Token replaced), possibly in
// another dialog.
type TokenLink struct {
	Token            string
	FromDialog       string
	FromRow          int
	ToDialog         string
	ToRow            int
	FromHere, ToHere bool
}

// Dialog is one dialog's page.
type Dialog struct {
	Summary
	Rows                      []Row
	More                      int // records beyond maxRows, not shown
	Picture                   Picture
	Parents                   []string // dialogs it was linked from (at most maxLinked)
	Children                  []string // dialogs linked from it (at most maxLinked)
	MoreParents, MoreChildren int      // the other dialogs linked from and to it, not listed
	Tokens                    []TokenLink
	Revocation                *revoke.Revocation
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func isEndpoint(e *audit.Entry) bool {
	switch e.Handler {
	case audit.HandlerReceiver, audit.HandlerIngress, audit.HandlerRevocations:
		return false
	}
	return true
}

func rowOf(n int, e *audit.Entry) Row {
	r := Row{N: n, Time: e.Time, Handler: e.Handler, Decision: e.Decision, Code: e.Code, Scopes: e.Scopes, Op: e.Operation,
		Hop: e.Hop, Txn: e.Txn, Rule: e.Rule, Issued: shortHash(e.IssuedSHA256), Subject: shortHash(e.SubjectSHA256),
		LinkedFrom: e.LinkedFrom, TargetKind: e.TargetKind, Target: e.Target, Reason: e.Reason,
		Revocation: e.Handler == audit.HandlerRevocations, Endpoint: isEndpoint(e)}
	r.From = e.Requester
	if r.From == "" {
		r.From = e.ReqWL
	}
	if r.From == "" {
		r.From = "(unknown caller)"
	}
	r.To = e.Audience
	if len(r.To) == 0 && e.Peer != "" {
		r.To = []string{e.Peer}
	}
	if len(r.To) == 0 {
		if r.Endpoint {
			r.To = []string{"(token service)"}
		} else {
			r.To = []string{"(" + e.Handler + ")"}
		}
	}
	return r
}

// dialogOf is the dialog a record is in: a revocation record is in the dialog it revoked.
func dialogOf(e *audit.Entry) string {
	if e.Handler == audit.HandlerRevocations && e.TargetKind == string(revoke.Dialog) {
		return e.Target
	}
	return e.Dialog
}

func domainOf(wl string) string {
	if id, err := identifier.Parse(wl); err == nil {
		return id.TrustDomain()
	}
	return ""
}

func addUnique(s []string, v ...string) []string {
	for _, x := range v {
		if x != "" && !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	return s
}

// addBounded is addUnique up to maxListed; what does not fit is counted in more
// (a value may be counted twice: "more" is at least).
func addBounded(s []string, more *int, v ...string) []string {
	for _, x := range v {
		if x == "" || slices.Contains(s, x) {
			continue
		}
		if len(s) >= maxListed {
			*more++
			continue
		}
		s = append(s, x)
	}
	return s
}

// capped collects distinct values, keeping the first max: more counts the distinct
// others (exactly: seen holds every value met, bounded as the records read are).
type capped struct {
	max  int
	list []string
	more int
	seen map[string]bool
}

// newCapped is a capped list of at most max values that never takes skip.
func newCapped(max int, skip string) *capped {
	return &capped{max: max, seen: map[string]bool{"": true, skip: true}}
}

func (c *capped) add(v ...string) {
	for _, x := range v {
		if c.seen[x] {
			continue
		}
		c.seen[x] = true
		if len(c.list) < c.max {
			c.list = append(c.list, x)
		} else {
			c.more++
		}
	}
}

// revokedSet is the dialogs a live revocation covers directly, and those whose
// linked dialogs it covers too.
func revokedSet(revs []revoke.Revocation) (direct map[string]*revoke.Revocation) {
	direct = map[string]*revoke.Revocation{}
	for i := range revs {
		if revs[i].Kind == revoke.Dialog {
			direct[revs[i].ID] = &revs[i]
		}
	}
	return direct
}

func revokedFor(id string, parents []string, direct map[string]*revoke.Revocation) *revoke.Revocation {
	if r := direct[id]; r != nil {
		return r
	}
	for _, p := range parents {
		if r := direct[p]; r != nil && r.Linked {
			return r
		}
	}
	return nil
}

// summaries groups entries (oldest first) by dialog, most recent first.
func summaries(entries []audit.Entry, revs []revoke.Revocation) []Summary {
	by := map[string]*Summary{}
	var order []*Summary
	for i := range entries {
		e := &entries[i]
		id := dialogOf(e)
		if id == "" {
			continue
		}
		s := by[id]
		if s == nil {
			s = &Summary{ID: id, First: e.Time}
			by[id] = s
			order = append(order, s)
		}
		s.Last = e.Time
		if t, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
			s.last = t
		}
		switch e.Decision {
		case audit.Issued:
			s.Issued++
		case audit.Refused:
			s.Refused++
		case audit.Accepted:
			s.Accepted++
		}
		if e.Handler != audit.HandlerRevocations {
			s.Workloads = addBounded(s.Workloads, &s.MoreWorkloads, e.ReqWL, e.Requester)
			s.Workloads = addBounded(s.Workloads, &s.MoreWorkloads, e.Audience...)
			s.Linked = addBounded(s.Linked, &s.MoreLinked, e.LinkedFrom)
		}
	}
	direct := revokedSet(revs)
	out := make([]Summary, 0, len(order))
	for _, s := range order {
		for _, w := range s.Workloads {
			s.Domains = addUnique(s.Domains, domainOf(w))
		}
		s.Revoked = revokedFor(s.ID, s.Linked, direct) != nil
		out = append(out, *s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].last.After(out[j].last) })
	if len(out) > maxDialogs {
		out = out[:maxDialogs]
	}
	return out
}

// dialog is the page of dialog id from entries (oldest first); ok is false when the
// trail read holds no record of it.
func dialog(id string, entries []audit.Entry, revs []revoke.Revocation) (Dialog, bool) {
	var d Dialog
	var ss []Summary
	for _, s := range summaries(entries, nil) {
		if s.ID == id {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		// Not among the recent dialogs listed (or none): summarize it alone.
		var mine []audit.Entry
		for i := range entries {
			if dialogOf(&entries[i]) == id {
				mine = append(mine, entries[i])
			}
		}
		if ss = summaries(mine, nil); len(ss) == 0 {
			return Dialog{}, false
		}
	}
	d.Summary = ss[0]
	// Rows, and where each issued token was first recorded.
	type at struct {
		dialog string
		row    int
	}
	issued := map[string]at{}
	rowOfEntry := map[int]int{}
	// A dialog may be linked to thousands (an agent's loop, an attacker's): both lists
	// are capped, as the index is.
	parents, children := newCapped(maxLinked, id), newCapped(maxLinked, id)
	for i := range entries {
		e := &entries[i]
		if dialogOf(e) == id {
			if len(d.Rows) >= maxRows {
				d.More++
				continue
			}
			r := rowOf(len(d.Rows)+1, e)
			rowOfEntry[i] = r.N
			d.Rows = append(d.Rows, r)
			parents.add(e.LinkedFrom)
		} else if e.LinkedFrom == id {
			children.add(e.Dialog)
		}
	}
	for i := range entries {
		e := &entries[i]
		if e.SubjectSHA256 != "" {
			if from, ok := issued[e.SubjectSHA256]; ok {
				to := dialogOf(e)
				l := TokenLink{Token: shortHash(e.SubjectSHA256), FromDialog: from.dialog, FromRow: from.row, ToDialog: to, ToRow: rowOfEntry[i],
					FromHere: from.dialog == id, ToHere: to == id}
				if (l.FromHere || l.ToHere) && len(d.Tokens) < maxRows {
					d.Tokens = append(d.Tokens, l)
					if l.FromHere && !l.ToHere {
						children.add(to)
					}
					if l.ToHere && !l.FromHere {
						parents.add(from.dialog)
					}
				}
			}
		}
		if e.IssuedSHA256 != "" && e.Decision == audit.Issued {
			issued[e.IssuedSHA256] = at{dialog: dialogOf(e), row: rowOfEntry[i]}
		}
	}
	d.Parents, d.MoreParents = parents.list, parents.more
	d.Children, d.MoreChildren = children.list, children.more
	d.Revocation = revokedFor(id, d.Parents, revokedSet(revs))
	d.Revoked = d.Revocation != nil
	d.Picture = draw(d.Rows)
	return d, true
}
