package ttsservice

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

func revocationsYAML(da *witDomain, addr, admin string) string {
	return domainAYAML(da, addr) + `revocations:
  enabled: true
  bound: 2s
  admin:
    listen: ` + admin + `
    administrators: ["wimse://a.example/ops/alice"]
`
}

// Issue 26, configured as main runs it: an administrator revokes a dialog through the
// admin API on its own listener with a WIT and an HTTP signature, and the TTS issues
// no more tokens in it (without waiting for the bound: the memory store's notice); a
// workload that is not an administrator is refused; the token endpoint's listener does
// not serve the API.
func TestIssue26_TTSAdminAPIConfigured(t *testing.T) {
	ctx := context.Background()
	da := newWITDomain(t, "a.example")
	addr, admAddr := freeLoopback(t), freeLoopback(t)
	p := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", revocationsYAML(da, addr, admAddr))}, nil)
	md, err := oauth.Discover(ctx, nil, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	a1, a1Key, a1WIT := da.workload(t, "/agent/a1")
	request := func(dlg string) error {
		_, err := selfSignedTxn(ctx, a1, a1Key, a1WIT, md.Issuer, md.TokenEndpoint, "trip.read", dlg)
		return err
	}
	if err := request("D1"); err != nil {
		t.Fatal(err)
	}
	api := da.operator(t, admAddr)
	if _, err := api.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Reason: "runaway"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // a failure deadline: the loop waits for the notice's effect
	for err = request("D1"); !errcode.Is(err, errcode.DialogRevoked); err = request("D1") {
		if time.Now().After(deadline) {
			t.Fatalf("a token in the revoked dialog: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := request("D2"); err != nil {
		t.Fatalf("another dialog: %v", err)
	}
	notAdmin := &revokeapi.Client{URL: api.URL, Signer: httpsig.NewSigner(a1Key, a1WIT)}
	if _, err := notAdmin.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D2", Reason: "x"}); !errcode.Is(err, errcode.NotAuthorized) {
		t.Fatalf("not an administrator: %v", err)
	}
	res, err := http.Post(p.URL+revokeapi.Path, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("the token endpoint's listener answered the admin path with %d", res.StatusCode)
	}
	if l, err := api.List(ctx); err != nil || len(l) != 1 || l[0].By != "wimse://a.example/ops/alice" {
		t.Fatalf("List = %+v, %v", l, err)
	}
}

// Issue 26: an admin API without administrators, or off loopback without TLS, does
// not start.
func TestIssue26_TTSAdminAPIConfigChecked(t *testing.T) {
	da := newWITDomain(t, "a.example")
	base := revocationsYAML(da, "127.0.0.1:0", "127.0.0.1:0")
	wantRevocationsRefused(t, map[string]string{
		"no administrators": strings.Replace(base, `administrators: ["wimse://a.example/ops/alice"]`, `administrators: []`, 1),
		"bad administrator": strings.Replace(base, `wimse://a.example/ops/alice`, `not an id`, 1),
		"off loopback":      strings.Replace(strings.Replace(base, "development: true\n", "", 1), "listen: 127.0.0.1:0\n    administrators", "listen: 0.0.0.0:0\n    administrators", 1),
		"disabled":          strings.Replace(base, "  enabled: true\n  bound", "  enabled: false\n  bound", 1),
	})
}

// The configuration the tests above refuse is otherwise good.
func TestIssue26_TTSAdminAPIConfigAccepted(t *testing.T) {
	cfg := &Config{}
	if err := kit.ParseYAML([]byte(revocationsYAML(newWITDomain(t, "a.example"), "127.0.0.1:0", "127.0.0.1:0")), cfg); err != nil {
		t.Fatal(err)
	}
	applyDefaults(cfg)
	if err := checkRevocations(cfg); err != nil {
		t.Fatal(err)
	}
}

// Issue 26: identity chaining's AS A issues no grant for a peer from a Txn-Token of a
// revoked dialog (the TTS wraps the chaining grants with its revocation check).
func TestIssue26_ChainingGrantRefusedInRevokedDialog(t *testing.T) {
	ctx := context.Background()
	da, db := newWITDomain(t, "a.example"), newWITDomain(t, "b.example")
	addrA, addrB, admA := freeLoopback(t), freeLoopback(t), freeLoopback(t)
	cfgA, cfgB := twoDomainConfigs(da, db, addrA, addrB)
	cfgA += `revocations:
  enabled: true
  admin:
    listen: ` + admA + `
    administrators: ["wimse://a.example/ops/alice"]
`
	procB := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgB)}, nil)
	procA := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgA)}, nil)
	mdA, mdB := discoverTwoDomains(t, ctx, procA, procB)
	a2, a2Key, a2WIT := da.workload(t, "/agent/a2")
	txn, err := selfSignedTxn(ctx, a2, a2Key, a2WIT, "http://"+addrA, mdA.TokenEndpoint, "trip.read trip.book", "D1-cmd")
	if err != nil {
		t.Fatal(err)
	}
	cc := &chaining.Client{WIT: a2WIT, Key: a2Key}
	chainToDomainB(t, ctx, cc, mdA, mdB, txn.AccessToken)

	_, adminKey, adminWIT := da.workload(t, "/ops/alice")
	api := &revokeapi.Client{URL: "http://" + admA + revokeapi.Path, Signer: httpsig.NewSigner(adminKey, adminWIT)}
	if _, err := api.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1-cmd", Reason: "runaway"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // a failure deadline: the loop waits for the notice's effect
	for {
		_, err := cc.Grant(ctx, chaining.GrantParams{TokenEndpoint: mdA.TokenEndpoint, TxnToken: txn.AccessToken, Audience: "as.b.example"})
		if errcode.Is(err, errcode.DialogRevoked) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a grant from a Txn-Token of the revoked dialog: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantRevocationsRefused: each configuration of ys (by name) parses, and its
// revocations section is refused.
func wantRevocationsRefused(t *testing.T, ys map[string]string) {
	t.Helper()
	for name, y := range ys {
		cfg := &Config{}
		if err := kit.ParseYAML([]byte(y), cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		applyDefaults(cfg)
		if err := checkRevocations(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// operator is the administrator /ops/alice's client of the admin API on admAddr,
// signing with its WIT and key.
func (d *witDomain) operator(t *testing.T, admAddr string) *revokeapi.Client {
	t.Helper()
	_, key, wit := d.workload(t, "/ops/alice")
	return &revokeapi.Client{URL: "http://" + admAddr + revokeapi.Path, Signer: httpsig.NewSigner(key, wit)}
}
