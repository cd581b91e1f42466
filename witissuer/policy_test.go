package witissuer

import (
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

func mustPolicy(t *testing.T, p Policy) *Policy {
	t.Helper()
	if err := p.normalize(); err != nil {
		t.Fatal(err)
	}
	return &p
}

// identifier-03 sections 4.3 and 7.6 (wimse.md ID-5): authorisation compares whole
// canonical identifiers; prefix matching happens only where a rule says so, and a rule
// never matches across a path-segment boundary.
func TestIdentifier03Sec4_3_PolicyComparesWholeIdentifiers(t *testing.T) {
	p := mustPolicy(t, Policy{TrustDomains: []string{"td.example"},
		Rules: []Rule{{FromPrefix: "spiffe://td.example/ns/", ToPrefix: "wimse://td.example/ns/"}}})
	id := identifier.MustParse("spiffe://td.example/ns/a")
	cases := []struct {
		req  string
		want string
		code errcode.Code
	}{
		{"", "spiffe://td.example/ns/a", ""},
		{"spiffe://td.example/ns/a", "spiffe://td.example/ns/a", ""},
		{"wimse://td.example/ns/a", "wimse://td.example/ns/a", ""},
		{"wimse://td.example/ns/b", "", errcode.SubjectNotAllowed},
		{"wimse://td.example/ns/a/b", "", errcode.SubjectNotAllowed},
		{"spiffe://td.example/ns/a/b", "", errcode.SubjectNotAllowed},
		{"wimse://td.example/nsx/a", "", errcode.SubjectNotAllowed},
	}
	for _, c := range cases {
		var req identifier.ID
		if c.req != "" {
			req = identifier.MustParse(c.req)
		}
		got, err := p.Subject(id, req)
		if errcode.CodeOf(err) != c.code || (c.code == "" && got.String() != c.want) {
			t.Errorf("%q: got %s, %v", c.req, got, err)
		}
	}
	// The rule does not reach spiffe://td.example/nsx/...
	if _, err := p.Subject(identifier.MustParse("spiffe://td.example/nsx/a"), identifier.MustParse("wimse://td.example/nsx/a")); !errcode.Is(err, errcode.SubjectNotAllowed) {
		t.Fatalf("rule matched across a segment boundary: %v", err)
	}
	// Prefixes must end in "/" and be identifiers' beginnings.
	for _, bad := range []Rule{{FromPrefix: "spiffe://td.example/ns", ToPrefix: "wimse://td.example/ns/"}, {FromPrefix: "spiffe://TD/", ToPrefix: "wimse://td.example/"}} {
		q := Policy{TrustDomains: []string{"td.example"}, Rules: []Rule{bad}}
		if err := q.normalize(); err == nil {
			t.Errorf("rule %+v accepted", bad)
		}
	}
}

// identifier-03 section 7.3 (ID-6) and WIT-1: an issuer speaks only for its own trust
// domains, so an identity authenticated from a federated bundle gets no WIT for itself,
// only (through a rule) for an identifier inside this issuer's trust domain.
func TestIdentifier03Sec7_3_SubjectsStayInTheIssuersTrustDomains(t *testing.T) {
	p := mustPolicy(t, Policy{TrustDomains: []string{"td.example"},
		Rules: []Rule{{FromPrefix: "spiffe://partner.example/", ToPrefix: "wimse://td.example/partner/"}}})
	partner := identifier.MustParse("spiffe://partner.example/agent")
	if _, err := p.Subject(partner, identifier.ID{}); !errcode.Is(err, errcode.SubjectNotAllowed) {
		t.Fatalf("foreign identity got its own subject: %v", err)
	}
	if _, err := p.Subject(identifier.MustParse("spiffe://td.example"), identifier.ID{}); !errcode.Is(err, errcode.SubjectNotAllowed) {
		t.Fatalf("a bare trust domain got a WIT: %v", err)
	}
	got, err := p.Subject(partner, identifier.MustParse("wimse://td.example/partner/agent"))
	if err != nil || got.String() != "wimse://td.example/partner/agent" {
		t.Fatalf("mapped: %v %v", got, err)
	}
}

// creds-02 section 9.2.1: lifetimes are limited; a request for more is refused, not
// trimmed; no request gets the default.
func TestCreds02Sec9_2_1_LifetimeRefusedNotTrimmed(t *testing.T) {
	p := mustPolicy(t, Policy{TrustDomains: []string{"td.example"}, MaxLifetime: time.Hour, DefaultLifetime: 10 * time.Minute})
	if d, err := p.Lifetime(0); err != nil || d != 10*time.Minute {
		t.Fatal(d, err)
	}
	if d, err := p.Lifetime(time.Hour); err != nil || d != time.Hour {
		t.Fatal(d, err)
	}
	if _, err := p.Lifetime(time.Hour + time.Second); !errcode.Is(err, errcode.LifetimeTooLong) {
		t.Fatal(err)
	}
	q := Policy{TrustDomains: []string{"td.example"}, MaxLifetime: time.Minute, DefaultLifetime: time.Hour}
	if err := q.normalize(); err == nil {
		t.Fatal("default above the maximum accepted")
	}
	if err := (&Policy{}).normalize(); err == nil {
		t.Fatal("policy without trust domains accepted")
	}
}
