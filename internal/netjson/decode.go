package netjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// DecodeClaims decodes the claims set of a token (a JWS payload) into v, which points
// to a zero struct, mapping errors to codes: a claim whose UnmarshalJSON returned an
// *errcode.Error keeps its code, anything else is invalid_encoding. Claim names match
// exactly and a claim named twice is refused (RFC 7519 section 4). A claims set in the
// plain form the project's issuers write is read in one scan (plain.go); any other goes
// through DecodeObject.
func DecodeClaims(payload []byte, v any) error {
	if decodePlain(payload, v) {
		return nil
	}
	if err := DecodeObject(payload, v); err != nil {
		if c := errcode.CodeOf(err); c != errcode.Unmapped {
			return err
		}
		return errcode.Wrap(errcode.InvalidEncoding, err, "claims are not the expected JSON")
	}
	return nil
}

// DecodeObject decodes a JSON document a peer sent (a response body, a JWK, metadata,
// a JSON-RPC envelope) into v, as json.Unmarshal does, but with member names matched
// exactly (a NameError for one that matches a field only under case folding) and a
// member named twice refused where it decodes into something (a DuplicateError).
// Members v has no place for are ignored, as json.Unmarshal ignores them. Errors are
// not mapped to codes: the caller knows what the document was.
func DecodeObject(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return checkNames(data, v)
}

// DecodeOnlyKnown decodes the first JSON value of data into v, refusing, besides what
// DecodeObject refuses, any member v has no place for (a request of this project's own
// protocols, a record it wrote). It returns the octets the value took: what follows is
// the caller's to refuse or allow.
func DecodeOnlyKnown(data []byte, v any) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return 0, err
	}
	n := int(dec.InputOffset())
	// DisallowUnknownFields lets {"REQUEST": ...} through as "request".
	if err := checkNames(data[:n], v); err != nil {
		return 0, err
	}
	return n, nil
}

// DecodeKeepingNumbers decodes one JSON value into v with the checks of DecodeObject,
// numbers that land in an interface kept as json.Number (so that the members of a
// Txn-Token's tctx and rctx survive a re-issuance octet for octet: a float64 would
// round large integers), and data after the value refused (ErrTrailing).
func DecodeKeepingNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return ErrTrailing
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return checkNames(data, v)
}

// ErrTrailing is DecodeKeepingNumbers' error for data after the JSON value.
var ErrTrailing = errors.New("trailing data after the JSON value")

// DecodeMembers decodes a JSON object that a request carries as a parameter (a token
// request's request_context or request_details) to its members, each value kept as its
// JSON text. A member named twice in any object at any depth is refused (a
// DuplicateError): a reader of the same text could resolve it otherwise. Text that is
// not one JSON object, null included, is an error. Bound the depth first (DeeperThan):
// the check recurses once per level.
func DecodeMembers(text string) (map[string]json.RawMessage, error) {
	if m, ok := plainMembers(text); ok {
		return m, nil
	}
	dup, err := FirstDuplicate(text)
	if err != nil {
		return nil, err
	}
	if dup != "" {
		return nil, duplicate(dup)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errNotObject
	}
	return m, nil
}

var errNotObject = errors.New("not a JSON object")

// plainMembers is DecodeMembers' fast path: an object in the plain form of scanObject
// (plain names, plain string or integer values, each name once) decodes to what
// json.Unmarshal into a map[string]json.RawMessage gives. Anything else, a repeated
// name included, is left to the reference path (ok false). FuzzPlainMembers compares
// the two.
func plainMembers(text string) (map[string]json.RawMessage, bool) {
	var (
		m   map[string]json.RawMessage
		val []byte // the values' text, copied once; each value is a capped slice of it
	)
	ok := scanObject(text, func(ns, vs Span) bool {
		if m == nil {
			m, val = make(map[string]json.RawMessage), []byte(text)
		}
		name := text[ns.Start:ns.End]
		if _, dup := m[name]; dup {
			return false
		}
		m[name] = json.RawMessage(val[vs.Start:vs.End:vs.End])
		return true
	})
	if ok && m == nil {
		m = map[string]json.RawMessage{} // {}
	}
	return m, ok
}

// FirstDuplicate returns the first member name that an object of the JSON text s, at
// any depth, names twice (after unescaping: "dlg" and "\u0064lg" are one name), or ""
// when there is none; an error when s is not one JSON value. Bound the depth first
// (DeeperThan): the walk recurses once per level of nesting.
func FirstDuplicate(s string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	name, err := duplicateIn(dec)
	if err != nil || name != "" {
		return name, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", ErrTrailing
	}
	return "", nil
}

func duplicateIn(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]struct{}{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", err
			}
			name, _ := k.(string)
			if _, dup := seen[name]; dup {
				return name, nil
			}
			seen[name] = struct{}{}
			if name, err := duplicateIn(dec); err != nil || name != "" {
				return name, err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if name, err := duplicateIn(dec); err != nil || name != "" {
				return name, err
			}
		}
	default:
		return "", nil
	}
	_, err = dec.Token() // the closing delimiter
	return "", err
}

// DecodeString decodes a JSON string value (a member's text, such as a dialog
// identifier or an aud) as json.Unmarshal into a string does, null included; directly
// when it is plain (printable ASCII between its quotes, no escape, which decodes to
// exactly those octets), through encoding/json otherwise (escapes, and control or
// non-ASCII octets, which it may replace with U+FFFD).
func DecodeString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		in := raw[1 : len(raw)-1]
		plain := true
		for _, c := range in {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			return string(in), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}
