package handoff

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Carriage in SDK metadata (section 6). Agent SDKs carry metadata as map[string]any
// (MCP go-sdk's Meta, a2a-go's Metadata), and some copy or store those maps in ways
// that accept only JSON-native values (a2a-go's task store refuses json.RawMessage).
// These helpers put the element into such a map as values made only of map[string]any,
// []any, string, float64 and bool, and read it back from whatever shape the SDK
// decoded or kept it in.

// MarshalText returns the JSON carriage form (Signed.Text): a JwsCompact, or the COSE
// message in base64url. A Signed therefore marshals to JSON as that string, never as a
// Go struct.
func (s Signed) MarshalText() ([]byte, error) {
	if (s.Form != JWS && s.Form != COSE) || len(s.Octets) == 0 {
		return nil, errcode.New(errcode.InvalidEncoding, "not a signed handoff (form %d, %d octets)", s.Form, len(s.Octets))
	}
	return []byte(s.Text()), nil
}

// UnmarshalText reads the JSON carriage form (ParseSignedText).
func (s *Signed) UnmarshalText(b []byte) error {
	v, err := ParseSignedText(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// UnmarshalJSON reads the JSON form of a Handoff (ParseHandoffJSON, default bounds).
func (h *Handoff) UnmarshalJSON(b []byte) error {
	v, err := ParseHandoffJSON(b, 0)
	if err != nil {
		return err
	}
	*h = *v
	return nil
}

// MetaValue returns the JSON form of h as JSON-native values: a map[string]any whose
// members are strings, []any, and, in unsigned extra members, float64, bool and nested
// maps. A number that a float64 cannot hold exactly is refused (errcode.InvalidEncoding)
// rather than rounded.
func (h *Handoff) MetaValue() (map[string]any, error) {
	b, err := h.MarshalJSON()
	if err != nil {
		return nil, err
	}
	v, err := nativeJSON(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errcode.New(errcode.InvalidEncoding, "handoff is not a JSON object")
	}
	return m, nil
}

// nativeJSON decodes b into JSON-native Go values, refusing numbers float64 cannot hold
// exactly.
func nativeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "not JSON")
	}
	return nativeNumbers(v)
}

func nativeNumbers(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		f, err := t.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, errcode.New(errcode.InvalidEncoding, "number %s is not a float64", errcode.Cut(string(t)))
		}
		if !strings.ContainsAny(string(t), ".eE") {
			// An integer: exact in a float64 only up to 2^53.
			if i, err := t.Int64(); err != nil || i > 1<<53 || i < -(1<<53) {
				return nil, errcode.New(errcode.InvalidEncoding, "integer %s cannot be held exactly as a JSON-native number", errcode.Cut(string(t)))
			}
		}
		return f, nil
	case map[string]any:
		return convertMap(t, nativeNumbers)
	case []any:
		return convertEach(t, nativeNumbers)
	}
	return v, nil
}

// metaJSON returns the JSON of a metadata value as an SDK may hold it: raw JSON
// (json.RawMessage or []byte), or any value encoding/json marshals (the map MetaValue
// gives, a *Handoff, a string, a Signed).
func metaJSON(v any) ([]byte, error) {
	switch t := v.(type) {
	case json.RawMessage:
		return t, nil
	case []byte:
		return t, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "metadata value")
	}
	return b, nil
}

// HandoffFromMeta reads a Handoff from a metadata value in any shape an SDK holds it:
// the map MetaValue gives (or the one a JSON decoder made), raw JSON, or a *Handoff.
// nil gives (nil, nil).
func HandoffFromMeta(v any) (*Handoff, error) {
	if v == nil {
		return nil, nil
	}
	b, err := metaJSON(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return ParseHandoffJSON(b, 0)
}

// SignedFromMeta reads a signed status from a metadata value: its text (a string), raw
// JSON holding that string, or a Signed. nil gives (nil, nil).
func SignedFromMeta(v any) (*Signed, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		s, err := ParseSignedText(t)
		if err != nil {
			return nil, err
		}
		return &s, nil
	case Signed:
		return &t, nil
	case *Signed:
		return t, nil
	}
	b, err := metaJSON(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return parseStatusValue(b)
}

// PutHandoffMeta sets meta[key] to h as JSON-native values (MetaValue) and returns the
// map (a new one when meta is nil). key is MCPMetaKey or A2AExtensionURI (section 6).
func PutHandoffMeta(meta map[string]any, key string, h *Handoff) (map[string]any, error) {
	v, err := h.MetaValue()
	if err != nil {
		return nil, err
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[key] = v
	return meta, nil
}

// HandoffInMeta reads the Handoff under key, (nil, nil) when there is none.
func HandoffInMeta(meta map[string]any, key string) (*Handoff, error) {
	return HandoffFromMeta(meta[key])
}

// PutStatusMeta sets meta[key] to the text of s and returns the map (a new one when
// meta is nil).
func PutStatusMeta(meta map[string]any, key string, s Signed) (map[string]any, error) {
	t, err := s.MarshalText()
	if err != nil {
		return nil, err
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[key] = string(t)
	return meta, nil
}

// StatusInMeta reads the signed status under key, (nil, nil) when there is none. The
// status is not verified here.
func StatusInMeta(meta map[string]any, key string) (*Signed, error) {
	return SignedFromMeta(meta[key])
}
