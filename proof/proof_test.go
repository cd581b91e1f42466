package proof

import "testing"

func TestParseRoundTrip(t *testing.T) {
	for _, m := range []Method{HTTPSig, WPT} {
		b, err := m.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Method
		if err := got.UnmarshalText(b); err != nil || got != m {
			t.Fatalf("%s: got %v, %v", b, got, err)
		}
	}
	if m, err := Parse(""); err != nil || m != HTTPSig {
		t.Fatalf("default: %v, %v", m, err)
	}
	if _, err := Parse("mtls"); err == nil {
		t.Fatal("unknown method accepted")
	}
	if _, err := Method(7).MarshalText(); err == nil {
		t.Fatal("unknown method marshaled")
	}
}
