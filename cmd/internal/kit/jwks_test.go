package kit

import (
	"strings"
	"testing"
)

// JWKS.One: exactly one of jwks_url, jwks_file names the keys; none names none, and
// both leave open which keys are meant.
func TestJWKSOne(t *testing.T) {
	for _, tc := range []struct {
		j    JWKS
		want bool
	}{
		{JWKS{}, false},
		{JWKS{URL: "https://a/jwks"}, true},
		{JWKS{File: "/a.json"}, true},
		{JWKS{URL: "https://a/jwks", File: "/a.json"}, false},
	} {
		if got := tc.j.One(); got != tc.want {
			t.Errorf("%+v: One() = %v, want %v", tc.j, got, tc.want)
		}
	}
}

// A section that embeds JWKS inline takes jwks_url and jwks_file as its own keys,
// and still refuses a misspelt one.
func TestJWKSInline(t *testing.T) {
	var sec struct {
		Issuer string `yaml:"issuer"`
		JWKS   `yaml:",inline"`
	}
	if err := ParseYAML([]byte("{issuer: i, jwks_url: https://a/jwks, jwks_file: /a.json}"), &sec); err != nil {
		t.Fatal(err)
	}
	if sec.Issuer != "i" || sec.URL != "https://a/jwks" || sec.File != "/a.json" {
		t.Fatalf("parsed %+v", sec)
	}
	if err := ParseYAML([]byte("{issuer: i, jwks: https://a/jwks}"), &sec); err == nil || !strings.Contains(err.Error(), "jwks") {
		t.Fatalf("jwks (misspelt): %v", err)
	}
}
