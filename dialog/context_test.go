package dialog_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dunglas/httpsfv"
)

var a1 = identifier.MustParse("wimse://a.example/agent/a1")

func TestNewParseRoundTrip(t *testing.T) {
	c, err := dialog.New("7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", a1, dialog.Member{Name: "purpose", Value: httpsfv.NewItem("trip")})
	if err != nil {
		t.Fatal(err)
	}
	want := `dlg="7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", initiator="wimse://a.example/agent/a1", purpose="trip"`
	if c.Value() != want {
		t.Fatalf("value %q", c.Value())
	}
	p, err := dialog.Parse(c.Value())
	if err != nil || !p.Equal(c) || p.DLG() != c.DLG() || p.Initiator() != a1 {
		t.Fatalf("%v %+v", err, p)
	}
	if m, ok := p.Member("purpose"); !ok || m.(httpsfv.Item).Value != "trip" {
		t.Fatal("unknown member not preserved")
	}
	h := http.Header{}
	p.Set(h)
	got, err := dialog.FromHeader(h)
	if err != nil || got.Value() != want {
		t.Fatal(err)
	}
}

// Section 4: dlg and initiator are required; the initiator is a workload identifier.
// Section 7: a malformed or repeated field is refused; parsing is strict and bounded.
func TestDialogBindingSec4_7_StrictParsing(t *testing.T) {
	for _, v := range []string{
		``,
		`initiator="wimse://a.example/agent/a1"`,
		`dlg="D1"`,
		`dlg=D1, initiator="wimse://a.example/agent/a1"`,
		`dlg="D1", initiator=wimse`,
		`dlg="D1";x=1, initiator="wimse://a.example/agent/a1"`,
		`dlg="D 1", initiator="wimse://a.example/agent/a1"`,
		`dlg="", initiator="wimse://a.example/agent/a1"`,
		`dlg="` + strings.Repeat("a", 129) + `", initiator="wimse://a.example/agent/a1"`,
		`dlg="D1", initiator="wimse://A.example/agent/a1"`,
		`dlg="D1", initiator="https://a.example/agent/a1"`,
		`dlg="D1", dlg="D2", initiator="wimse://a.example/agent/a1"`,
		`dlg="D1",initiator="wimse://a.example/agent/a1"`,
		`dlg="D1",  initiator="wimse://a.example/agent/a1"`,
		`dlg="D1", initiator=("wimse://a.example/agent/a1")`,
		`dlg="D1"; initiator="wimse://a.example/agent/a1"`,
		`dlg="D1", initiator="wimse://a.example/agent/a1", x=` + strings.Repeat("1", 5000),
	} {
		_, err := dialog.Parse(v)
		if errcode.CodeOf(err) != errcode.InvalidDialogContext {
			t.Errorf("%q: got %v, want invalid_dialog_context", v, err)
		}
	}
	h := http.Header{}
	h.Add(dialog.HeaderName, `dlg="D1", initiator="wimse://a.example/agent/a1"`)
	h.Add(dialog.HeaderName, `dlg="D1", initiator="wimse://a.example/agent/a1"`)
	if _, err := dialog.FromHeader(h); errcode.CodeOf(err) != errcode.DuplicateField {
		t.Fatalf("repeated field: %v", err)
	}
	if c, err := dialog.FromHeader(http.Header{}); c != nil || err != nil {
		t.Fatal("absent field must be nil, nil")
	}
	if _, err := dialog.New("D1", a1, dialog.Member{Name: "dlg", Value: httpsfv.NewItem("x")}); err == nil {
		t.Fatal("extra member may not override dlg")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`dlg="D1", initiator="wimse://a.example/agent/a1"`)
	f.Add(`dlg="D1", initiator="spiffe://a.example/x", p=?1, q=(1 2);a=b`)
	f.Add(`dlg=:AAA=:, initiator=1.5`)
	f.Fuzz(func(t *testing.T, v string) {
		c, err := dialog.Parse(v)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("uncoded rejection: %v", err)
			}
			return
		}
		if c.Value() != v || len(v) > dialog.MaxFieldSize {
			t.Fatalf("accepted %q as %q", v, c.Value())
		}
		again, err := dialog.Parse(c.Value())
		if err != nil || !again.Equal(c) {
			t.Fatalf("re-parse of an accepted value failed: %v", err)
		}
	})
}
