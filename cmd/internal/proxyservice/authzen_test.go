package proxyservice

import (
	"errors"
	"testing"

	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// Issue 25: ingress.authzen is checked by -check-config (https, or http on loopback
// only) and yields an authz.Decider over the PDP; while this build has no enforcement
// point at the ingress, the section is refused at start rather than left unenforced.
func TestProxyIngressAuthZEN(t *testing.T) {
	expectCheckConfig(t, "https PDP", checkedIngressYAML+"  authzen:\n    url: https://pdp.a.example\n    cache_ttl: 10s\n", "")
	expectCheckConfig(t, "loopback PDP", checkedIngressYAML+"  authzen: {url: \"http://127.0.0.1:8080/stores/x\", escape_ids: true}\n", "")
	expectCheckConfig(t, "plain http PDP", checkedIngressYAML+"  authzen: {url: \"http://pdp.a.example\"}\n", "ingress.authzen.url")
	expectCheckConfig(t, "no url", checkedIngressYAML+"  authzen: {timeout: 1s}\n", "ingress.authzen: url")

	in := &IngressConfig{AuthZEN: &kit.AuthZENConfig{URL: "https://pdp.a.example"}}
	d, err := openIngressDecider(in)
	if zd, ok := d.(authzen.Decider); err != nil || !ok || zd.Client.PDP() != "https://pdp.a.example" {
		t.Fatalf("decider: %#v %v", d, err)
	}
	if d, err := ingressDecider(in); d != nil || !errors.Is(err, errIngressAuthZENNotEnforced) {
		t.Fatalf("an unenforced decision point was accepted: %v %v", d, err)
	}
	if d, err := ingressDecider(&IngressConfig{}); d != nil || err != nil {
		t.Fatalf("without the section: %v %v", d, err)
	}
}
