package httpsig

import (
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dunglas/httpsfv"
)

// SignatureBase is an RFC 9421 signature base read back from its octets (section 2.5):
// the value of every covered component, and the @signature-params value. A record of a
// signature made on an earlier hop (package dialog's provenance) carries its base; the
// reader checks the octets against the signature, then what the base says it covered.
//
// Reading a base applies none of the profile's rules on components or parameters:
// those were applied when the signature was verified on its own hop.
type SignatureBase struct {
	// Covered are the component identifiers in the order of the base, as serialized
	// (e.g. `"@method"`, `"@path";req`), without "@signature-params".
	Covered []string
	// SignatureParams is the value of the last line, "@signature-params": the inner
	// list as Signature-Input carried it (ParseSignatureParams reads it).
	SignatureParams string
	values          map[string]string
}

// Value returns the value of the covered component with identifier id, serialized as
// in Covered (e.g. `"dialog-context"`), and whether the base covers it.
func (b *SignatureBase) Value(id string) (string, bool) {
	v, ok := b.values[id]
	return v, ok
}

// ParseSignatureBase reads a signature base as signatureBase writes it: one
// `"<id>": <value>` line per covered component, each id once, then
// `"@signature-params": <inner list>` as the last line. Errors are parse_error.
func ParseSignatureBase(base string) (*SignatureBase, error) {
	b := &SignatureBase{values: map[string]string{}}
	lines := strings.Split(base, "\n")
	for i, line := range lines {
		id, val, ok := strings.Cut(line, ": ")
		if !ok || !strings.HasPrefix(id, `"`) {
			return nil, errcode.New(errcode.ParseError, "base line %d is malformed", i)
		}
		if _, dup := b.values[id]; dup {
			return nil, errcode.New(errcode.ParseError, "base covers %s twice", errcode.Cut(id))
		}
		if id == `"@signature-params"` {
			if i != len(lines)-1 {
				return nil, errcode.New(errcode.ParseError, "@signature-params is not the last line")
			}
			b.SignatureParams = val
			return b, nil
		}
		b.values[id] = val
		b.Covered = append(b.Covered, id)
	}
	return nil, errcode.New(errcode.ParseError, "base has no @signature-params")
}

// ParseSignatureParams reads an @signature-params value (an inner list, as in a
// signature base or a Signature-Input member) into Params; created must be present as
// an sf-integer (missing_parameter), and parameters of another type than this profile
// writes are left out. Like ParseSignatureBase it applies none of the profile's rules.
// Errors are parse_error or missing_parameter.
func ParseSignatureParams(v string) (Params, error) {
	// The value is an inner list; RFC 8941 parses one only as a member, so it is read
	// as the value of a one-member dictionary.
	d, err := httpsfv.UnmarshalDictionary([]string{"p=" + v})
	if err != nil {
		return Params{}, errcode.Wrap(errcode.ParseError, err, "@signature-params")
	}
	m, _ := d.Get("p")
	il, ok := m.(httpsfv.InnerList)
	if !ok || il.Params == nil {
		return Params{}, errcode.New(errcode.ParseError, "@signature-params is not an inner list")
	}
	var p Params
	created, ok := il.Params.Get(paramCreated)
	c, isInt := created.(int64)
	if !ok || !isInt {
		return Params{}, errcode.New(errcode.MissingParameter, "@signature-params has no created")
	}
	p.Created = c
	p.Expires, _ = param[int64](il.Params, paramExpires)
	p.Nonce, _ = param[string](il.Params, paramNonce)
	p.Tag, _ = param[string](il.Params, paramTag)
	p.Audience, _ = param[string](il.Params, paramAudience)
	p.SignResponse, _ = param[bool](il.Params, paramSignResponse)
	p.ReqNonce, _ = param[string](il.Params, paramReqNonce)
	return p, nil
}

// param is the parameter name of ps when it has type T.
func param[T any](ps *httpsfv.Params, name string) (T, bool) {
	v, _ := ps.Get(name)
	t, ok := v.(T)
	return t, ok
}
