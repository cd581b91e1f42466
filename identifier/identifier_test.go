package identifier_test

import (
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// identifier-03 section 4.1: reject, never repair, non-canonical input.
func TestIdentifier03Sec4_1_RejectNonCanonical(t *testing.T) {
	for in, code := range map[string]errcode.Code{
		"WIMSE://a.example/x":                            errcode.UnsupportedScheme,
		"wimse:/a.example/x":                             errcode.UnsupportedScheme,
		"wimse://a.example.":                             errcode.InvalidTrustDomainChar,
		"wimse://a.example./x":                           errcode.InvalidTrustDomainChar,
		"wimse://a.example":                              errcode.EmptyPathSegment,
		"wimse://a.example/":                             errcode.EmptyPathSegment,
		"wimse://a.example/./x":                          errcode.DotSegment,
		"wimse://a.example/x/%2e":                        errcode.NonNormalizedPercentEncoding,
		"wimse://a.example/x%4":                          errcode.BadPercentEncoding,
		"wimse://a%2Eexample/x":                          errcode.InvalidTrustDomainChar,
		"wimse://a.example/" + "\u00e9":                  errcode.InvalidPathChar,
		"spiffe://a.example/%41":                         errcode.InvalidPathChar,
		"spiffe://a.example/x?":                          errcode.HasQuery,
		"wimse://a.example/x#":                           errcode.HasFragment,
		"wimse://[::1]/x":                                errcode.HasPort,
		"wimse://" + strings.Repeat("a", 256) + "/x":     errcode.TrustDomainTooLong,
		"wimse://a.example/" + strings.Repeat("a", 2048): errcode.IdentifierTooLong,
	} {
		_, err := identifier.Parse(in)
		if got := errcode.CodeOf(err); got != code {
			t.Errorf("%q: got %v (%v), want %s", in, got, err, code)
		}
	}
}

// identifier-03 section 4.3 (ID-5): compare whole URIs, never the path alone.
func TestIdentifier03Sec4_3_WholeURIComparison(t *testing.T) {
	a := identifier.MustParse("wimse://a.example/svc/pay")
	b := identifier.MustParse("wimse://b.example/svc/pay")
	c := identifier.MustParse("spiffe://a.example/svc/pay")
	if a.Equal(b) || a.Equal(c) || a.Path() != b.Path() {
		t.Fatal("identifiers with the same path in other trust domains or schemes compared equal")
	}
	if !a.Equal(identifier.MustParse("wimse://a.example/svc/pay")) {
		t.Fatal("equal identifiers compared unequal")
	}
	if !a.MemberOf("a.example") || a.MemberOf("A.example") {
		t.Fatal("trust domain membership is exact")
	}
	if a.Origin() != "wimse://a.example" {
		t.Fatal(a.Origin())
	}
}

func TestTextRoundTrip(t *testing.T) {
	var id identifier.ID
	if err := id.UnmarshalText([]byte("spiffe://example.org/ns/prod")); err != nil {
		t.Fatal(err)
	}
	b, _ := id.MarshalText()
	if string(b) != "spiffe://example.org/ns/prod" {
		t.Fatal(string(b))
	}
	if err := id.UnmarshalText([]byte("spiffe://Example.org/x")); err == nil {
		t.Fatal("non-canonical text accepted")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"wimse://a.example/x", "spiffe://example.org/a/b", "wimse://a.example/a%2Fb", "wimse://x/%zz", "spiffe:///", "wimse://a:1/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := identifier.Parse(s)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("rejection without a code: %v", err)
			}
			return
		}
		// Accepted input is canonical: it serializes to itself and parses again.
		if id.String() != s {
			t.Fatalf("accepted %q but serializes as %q", s, id.String())
		}
		again, err := identifier.Parse(id.String())
		if err != nil || !again.Equal(id) {
			t.Fatalf("round trip failed for %q: %v", s, err)
		}
		if len(s) > identifier.MaxLength || id.TrustDomain() == "" {
			t.Fatalf("accepted %q", s)
		}
	})
}
