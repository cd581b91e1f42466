package ttsservice

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// Issue 26 ("revocations ... are audited"), configured as main runs it: a revocation
// and its lift through the admin API are records of the TTS's own audit trail, which
// verifies with the TTS's published keys and names the administrator.
func TestIssue26_TTSRevocationsInAuditTrail(t *testing.T) {
	ctx := context.Background()
	da := newWITDomain(t, "a.example")
	addr, admAddr := freeLoopback(t), freeLoopback(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	y := revocationsYAML(da, addr, admAddr) + "audit:\n  sink: file\n  path: " + path + "\n  writer: tts-r\n"
	p := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", y)}, nil)
	md, err := oauth.Discover(ctx, nil, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	api := da.operator(t, admAddr)
	if _, err := api.Revoke(ctx, revokeapi.Request{Kind: revoke.Workload, ID: "wimse://a.example/agent/a9", Reason: "tricked"}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Lift(ctx, revoke.Workload, "wimse://a.example/agent/a9"); err != nil {
		t.Fatal(err)
	}
	jwks := fetchJWKS(t, ctx, md.JWKSURI)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range verifyTrail(t, path, jwks) {
		if e.Handler == audit.HandlerRevocations && e.Requester == "wimse://a.example/ops/alice" && e.TargetKind == "workload" &&
			e.Target == "wimse://a.example/agent/a9" {
			got = append(got, e.Decision)
		}
	}
	if len(got) != 2 || got[0] != audit.Revoked || got[1] != audit.Lifted {
		t.Fatalf("revocation records: %v", got)
	}
}
