package ttsservice

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// Issue 25: the authzen section is checked with the rest of the configuration
// (-check-config), and opens the TTS's IssuanceDecider, which asks the PDP the mapped
// question (authzen.IssuanceRequest) and returns its decision.
func TestAuthZENSection(t *testing.T) {
	base := func() *Config {
		cfg := &Config{}
		if err := kit.ParseYAML(defaultYAML, cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := base()
	cfg.AuthZEN = &kit.AuthZENConfig{URL: "http://pdp.example"}
	if err := validate(cfg); err == nil || !strings.Contains(err.Error(), "authzen.url") {
		t.Fatalf("plain http to a remote PDP: %v", err)
	}
	cfg = base()
	cfg.AuthZEN = &kit.AuthZENConfig{URL: "https://pdp.example"}
	if err := validate(cfg); err != nil {
		t.Fatal(err)
	}
	if d, err := openDecider(nil); d != nil || err != nil {
		t.Fatalf("without the section: %v %v", d, err)
	}

	var asked map[string]any
	pdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &asked)
		_, _ = w.Write([]byte(`{"decision":false,"context":{"reason":"no"}}`))
	}))
	defer pdp.Close()
	d, err := openDecider(&kit.AuthZENConfig{URL: pdp.URL, EvaluationURL: pdp.URL + "/access/v1/evaluation"})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := d.DecideIssuance(context.Background(), &authz.Issuance{Requester: "wimse://a.example/agent/a1", Audience: "a.example", Scopes: []string{"trip.read"}, Subject: "alice", SubjectTokenType: "st"})
	if err != nil || dec.Allow || dec.Reason != "no" {
		t.Fatalf("%+v %v", dec, err)
	}
	if asked["action"].(map[string]any)["name"] != "issue" || asked["subject"].(map[string]any)["id"] != "wimse://a.example/agent/a1" ||
		asked["resource"].(map[string]any)["id"] != "a.example" {
		t.Fatalf("asked %v", asked)
	}
}
