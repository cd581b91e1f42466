package netjson

import (
	"encoding/json"
	"errors"
	"testing"
)

type inner struct {
	Dlg string `json:"dlg"`
}

type outer struct {
	Aud  string           `json:"aud"`
	Cnf  *inner           `json:"cnf"`
	List []inner          `json:"list"`
	Map  map[string]inner `json:"map"`
	Raw  json.RawMessage  `json:"raw"`
	Any  any              `json:"any"`
	Name string
	embedded
}

type embedded struct {
	Exp int `json:"exp"`
}

// RFC 7519 section 4: names are case-sensitive; encoding/json alone folds case.
func TestCaseFoldedNamesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" accepted
	}{
		{`{"aud":"a","cnf":{"dlg":"d"},"list":[{"dlg":"x"}],"map":{"k":{"dlg":"y"}},"exp":1,"Name":"n"}`, ""},
		{`{"AUD":"a"}`, "aud"},
		{`{"Aud":"a"}`, "aud"},
		{`{"cnf":{"DLG":"d"}}`, "dlg"},
		{`{"list":[{"dlg":"x"},{"Dlg":"x"}]}`, "dlg"},
		{`{"map":{"k":{"DLG":"y"}}}`, "dlg"},
		{`{"EXP":1}`, "exp"},
		{`{"name":"n"}`, "Name"},
		{`{"\u0041UD":"a"}`, "aud"},
		{`{"aud":"a","unknown":1,"UNKNOWN":2}`, ""},         // unknown names are ignored in any case
		{`{"raw":{"AUD":1},"any":{"AUD":1}}`, ""},           // raw and interface values are not entered
		{` { "aud" : "a" , "cnf" : { "dlg" : "d" } } `, ""}, // white space
	} {
		var v outer
		err := DecodeObject([]byte(tc.in), &v)
		var ne *NameError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && (!errors.As(err, &ne) || ne.Field != tc.want):
			t.Errorf("%s: got %v, want a NameError for %s", tc.in, err, tc.want)
		}
	}
}

// A member named twice is refused where it decodes into something (a struct field or a
// map entry): encoding/json keeps the last copy, another parser may keep the first.
func TestRFC7519Sec4_DuplicateNamesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" accepted
	}{
		{`{"aud":"a","exp":1}`, ""},
		{`{"aud":"a","aud":"b"}`, "aud"},
		{`{"aud":"a","\u0061ud":"b"}`, "aud"},
		{`{"exp":1,"exp":2}`, "exp"},
		{`{"cnf":{"dlg":"a","dlg":"b"}}`, "dlg"},
		{`{"list":[{"dlg":"a"},{"dlg":"b","dlg":"c"}]}`, "dlg"},
		{`{"map":{"k":{"dlg":"y"},"k":{"dlg":"z"}}}`, "k"},
		{`{"map":{"k":{"dlg":"y"},"\u006b":{"dlg":"z"}}}`, "k"},
		{`{"list":[{"dlg":"a"},{"dlg":"a"}]}`, ""},        // one name in each of two objects
		{`{"unknown":1,"unknown":2}`, ""},                 // ignored members decode into nothing
		{`{"raw":{"x":1,"x":2},"any":{"y":1,"y":2}}`, ""}, // raw and interface values are not entered
	} {
		var v outer
		err := DecodeObject([]byte(tc.in), &v)
		var de *DuplicateError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && (!errors.As(err, &de) || de.Name != tc.want):
			t.Errorf("%s: got %v, want a DuplicateError for %s", tc.in, err, tc.want)
		}
	}
}
