package kit

import (
	"strings"
	"testing"
)

// AuthZEN Security Considerations (the PEP-PDP connection MUST be secured): a PDP is asked over
// https, or http only on a loopback address; a section without url, or with negative
// bounds, is refused.
func TestAuthZENConfigCheck(t *testing.T) {
	for _, c := range []struct {
		cfg  AuthZENConfig
		want string // "" for ok
	}{
		{AuthZENConfig{URL: "https://pdp.example"}, ""},
		{AuthZENConfig{URL: "http://127.0.0.1:8080/stores/x", MetadataURL: "http://127.0.0.1:8080/.well-known/authzen-configuration/x"}, ""},
		{AuthZENConfig{URL: "http://localhost:8080"}, ""},
		{AuthZENConfig{}, "url"},
		{AuthZENConfig{URL: "http://pdp.example"}, "https"},
		{AuthZENConfig{URL: "https://pdp.example", MetadataURL: "http://10.0.0.1/x"}, "https"},
		{AuthZENConfig{URL: "https://pdp.example", EvaluationURL: "http://pdp.example/access/v1/evaluation"}, "https"},
		{AuthZENConfig{URL: "pdp.example"}, "absolute"},
		{AuthZENConfig{URL: "https://pdp.example", CacheSize: -1}, "negative"},
		{AuthZENConfig{URL: "https://pdp.example", Timeout: -1}, "negative"},
	} {
		err := c.cfg.Check("authzen")
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	cl, err := OpenAuthZEN("authzen", &AuthZENConfig{URL: "https://pdp.example", EscapeIDs: true}, nil)
	if err != nil || cl.PDP() != "https://pdp.example" {
		t.Fatal(cl, err)
	}
	if _, err := OpenAuthZEN("authzen", &AuthZENConfig{URL: "https://pdp.example", CAFile: "/nonexistent"}, nil); err == nil {
		t.Fatal("a missing ca_file was accepted")
	}
}
