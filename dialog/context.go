package dialog

import (
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dunglas/httpsfv"
)

// HeaderName is the placeholder field name of dialog-binding section 1.
const HeaderName = "Dialog-Context"

// Limits on what crosses the network.
const (
	MaxFieldSize = 4096 // octets of the whole field value
	MaxDLGLength = 128
	MaxMembers   = 16
)

// Member names this package interprets.
const (
	MemberDLG       = "dlg"
	MemberInitiator = "initiator"
)

// Context is a Dialog-Context field value: the dialog identifier, the initiator, and any
// other members, exactly as they were serialized. It is immutable.
type Context struct {
	dlg       string
	initiator identifier.ID
	value     string
	dict      *httpsfv.Dictionary
}

// New makes the Dialog-Context an initiator proposes (dialog-binding section 5). extra
// members, if any, follow dlg and initiator in the given order.
func New(dlg string, initiator identifier.ID, extra ...Member) (*Context, error) {
	if err := checkDLG(dlg); err != nil {
		return nil, err
	}
	if initiator.IsZero() {
		return nil, errcode.New(errcode.InvalidRequest, "the initiator is required")
	}
	d := httpsfv.NewDictionary()
	d.Add(MemberDLG, httpsfv.NewItem(dlg))
	d.Add(MemberInitiator, httpsfv.NewItem(initiator.String()))
	for _, m := range extra {
		if m.Name == MemberDLG || m.Name == MemberInitiator {
			return nil, errcode.New(errcode.InvalidRequest, "member %q is set by New", m.Name)
		}
		if _, dup := d.Get(m.Name); dup {
			return nil, errcode.New(errcode.InvalidRequest, "member %q given twice", m.Name)
		}
		d.Add(m.Name, m.Value)
	}
	v, err := httpsfv.Marshal(d)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "serializing Dialog-Context")
	}
	return Parse(v)
}

// Member is an extra Dialog-Context member (an RFC 8941 item or inner list).
type Member struct {
	Name  string
	Value httpsfv.Member
}

// Parse validates a Dialog-Context field value. It is strict: the value must be the
// canonical RFC 8941 serialization of a Dictionary (what New and every conforming
// serializer emit), so that a repeated member, stray whitespace or a second spelling of
// the same dictionary is refused rather than read one way here and another way at the
// next hop; dlg and initiator must be present as sf-strings without parameters;
// initiator must be a canonical workload identifier. Other members are kept as they are.
func Parse(value string) (*Context, error) {
	if len(value) > MaxFieldSize {
		return nil, errcode.New(errcode.InvalidDialogContext, "Dialog-Context is %d octets, limit %d", len(value), MaxFieldSize)
	}
	d, err := httpsfv.UnmarshalDictionary([]string{value})
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidDialogContext, err, "Dialog-Context is not an RFC 8941 dictionary")
	}
	if n := len(d.Names()); n > MaxMembers {
		return nil, errcode.New(errcode.InvalidDialogContext, "Dialog-Context has %d members, limit %d", n, MaxMembers)
	}
	canonical, err := httpsfv.Marshal(d)
	if err != nil || canonical != value {
		return nil, errcode.New(errcode.InvalidDialogContext, "Dialog-Context is not in canonical form (repeated member, whitespace or a second spelling)")
	}
	dlg, err := stringMember(d, MemberDLG)
	if err != nil {
		return nil, err
	}
	if err := checkDLG(dlg); err != nil {
		return nil, err
	}
	init, err := stringMember(d, MemberInitiator)
	if err != nil {
		return nil, err
	}
	id, err := identifier.Parse(init)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidDialogContext, err, "initiator is not a workload identifier")
	}
	return &Context{dlg: dlg, initiator: id, value: value, dict: d}, nil
}

// FromHeader reads the Dialog-Context of a request or response: nil when absent, an
// error when repeated or malformed (dialog-binding section 7 defers repeated fields to
// the proof bindings, which refuse them).
func FromHeader(h http.Header) (*Context, error) {
	vals := h.Values(HeaderName)
	switch len(vals) {
	case 0:
		return nil, nil
	case 1:
		return Parse(vals[0])
	}
	return nil, errcode.New(errcode.DuplicateField, "more than one Dialog-Context field")
}

func stringMember(d *httpsfv.Dictionary, name string) (string, error) {
	m, ok := d.Get(name)
	if !ok {
		return "", errcode.New(errcode.InvalidDialogContext, "Dialog-Context has no %s", name)
	}
	it, ok := m.(httpsfv.Item)
	if !ok {
		return "", errcode.New(errcode.InvalidDialogContext, "%s must be an sf-string", name)
	}
	s, ok := it.Value.(string)
	if !ok || len(it.Params.Names()) > 0 {
		return "", errcode.New(errcode.InvalidDialogContext, "%s must be an sf-string without parameters", name)
	}
	return s, nil
}

// checkDLG: a dialog identifier is 1 to 128 characters of [A-Za-z0-9._~:-], enough for
// UUIDs, ULIDs and URNs, and nothing that needs escaping anywhere it is logged or stored.
func checkDLG(dlg string) error {
	if dlg == "" || len(dlg) > MaxDLGLength {
		return errcode.New(errcode.InvalidDialogContext, "dlg must be 1 to %d characters", MaxDLGLength)
	}
	for i := 0; i < len(dlg); i++ {
		c := dlg[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._~:-", c) >= 0) {
			return errcode.New(errcode.InvalidDialogContext, "dlg character %q is not allowed", c)
		}
	}
	return nil
}

// DLG returns the dialog identifier.
func (c *Context) DLG() string { return c.dlg }

// Initiator returns the initiator's workload identifier.
func (c *Context) Initiator() identifier.ID { return c.initiator }

// Value returns the field value exactly as parsed or made. Forwarders send this, never a
// re-serialization: the proofs of earlier hops cover these octets (section 7).
func (c *Context) Value() string { return c.value }

// Member returns a member by name, including ones this package does not interpret.
func (c *Context) Member(name string) (httpsfv.Member, bool) { return c.dict.Get(name) }

// Names returns the member names in order.
func (c *Context) Names() []string { return c.dict.Names() }

// Set puts the field on h, replacing any.
func (c *Context) Set(h http.Header) { h.Set(HeaderName, c.value) }

// Equal reports whether two contexts are the same octets (section 5: the initiator
// checks that the accepted context matches the proposed one).
func (c *Context) Equal(o *Context) bool { return c != nil && o != nil && c.value == o.value }
