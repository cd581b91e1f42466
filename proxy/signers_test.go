package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// Issue 22 point 2, a route crossing a trust boundary: its responses come from the
// peer trust domain the linked dialog is in, and by default only a workload of it is
// believed. A workload of the egress's own domain (trusted for WITs, and believed on an
// ordinary route) answering the linked dialog's first request with its own valid WIT
// is refused, and the agent gets neither the forged body nor a linked dialog.
func TestIssue22Point2_BoundaryRouteBelievesOnlyThePeerDomain(t *testing.T) {
	bw := newBoundary(t)
	_, forger := bw.a.workload(t, "/agent/a9")
	bw.signAs.Store(&forger)
	res, body := bw.call(t, "/b1", `{"hotel":"x"}`)
	if res.StatusCode < 400 || codeOf(res.StatusCode, body) != errcode.ResponseSignerMismatch ||
		res.Header.Get(proxy.LinkedDialogField) != "" || strings.Contains(string(body), "booked") {
		t.Fatalf("a response signed in a.example on a boundary route: %d %v %s", res.StatusCode, res.Header, body)
	}
	// B1 itself is believed: the default is the peer domain, not "anyone".
	bw.signAs.Store(nil)
	if res, body := bw.call(t, "/b1", `{"hotel":"x"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("B1's own response: %d %s", res.StatusCode, body)
	}
}

// Issue 22 point 2: the configuration of a route's signers: a boundary route names its
// peer trust domain, another than the egress's; named signers are of the route's own
// trust domain (section 11).
func TestIssue22Point2_RouteSignersConfig(t *testing.T) {
	self := identifier.MustParse("wimse://a.example/agent/a1")
	for name, c := range map[string]struct {
		rt   proxy.Route
		want string
	}{
		"foreign signers":      {proxy.Route{ResponseSigners: []string{"wimse://b.example/tool/"}}, "of trust domain b.example"},
		"no peer trust domain": {proxy.Route{Boundary: &proxy.BoundaryRoute{}}, "names the peer trust domain"},
		"own as peer":          {proxy.Route{Boundary: &proxy.BoundaryRoute{PeerTrustDomain: "a.example"}}, "not the egress's own"},
		"own signers on peer":  {proxy.Route{ResponseSigners: []string{"wimse://a.example/x"}, Boundary: &proxy.BoundaryRoute{PeerTrustDomain: "b.example"}}, "come from b.example"},
	} {
		if err := proxy.CheckRouteSigners(self, c.rt); errcode.CodeOf(err) != errcode.InvalidRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// Issue 22 point 2, an ordinary route: a route that names its upstream's workload
// refuses a response signed by another workload of the same trust domain (here t1's
// ingress answering a route that expects another tool), and takes the one it names.
func TestIssue22Point2_RouteNamesItsSigner(t *testing.T) {
	for name, want := range map[string]bool{"t1 named": true, "another tool named": false, "the tools' prefix": true} {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, pairOptions{route: func(t1 identifier.ID, r *proxy.Route) {
				switch name {
				case "t1 named":
					r.ResponseSigners = []string{t1.String()}
				case "another tool named":
					r.ResponseSigners = []string{t1.Origin() + "/tool/t2"}
				default:
					r.ResponseSigners = []string{t1.Origin() + "/tool/"}
				}
			}})
			res, body := p.call(t, "/t1", `{}`, start())
			switch {
			case want && res.StatusCode != http.StatusOK:
				t.Fatalf("%d %s", res.StatusCode, body)
			case !want && (codeOf(res.StatusCode, body) != errcode.ResponseSignerMismatch || res.Header.Get(proxy.RefusedByField) != "egress"):
				t.Fatalf("a response by an unnamed signer: %d %v %s", res.StatusCode, res.Header, body)
			}
		})
	}
}
