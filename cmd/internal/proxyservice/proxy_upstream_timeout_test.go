package proxyservice

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// upstreamTimeoutYAML is an egress and an ingress configuration, each with upstream
// as its egress section's (or its route's, with route set) or its ingress section's
// upstream_timeout member ("" none).
func upstreamTimeoutYAML(egress, route, ingress string) (string, string) {
	e := checkedEgressYAML
	if egress != "" {
		e = egressWith(e, "  upstream_timeout: "+egress+"\n")
	}
	if route != "" {
		e = strings.Replace(e, ", require_signed_response: true}", ", require_signed_response: true, upstream_timeout: "+route+"}", 1)
	}
	in := checkedIngressYAML
	if ingress != "" {
		in += "  upstream_timeout: " + ingress + "\n"
	}
	return e, in
}

func TestProxyCheckConfigUpstreamTimeout(t *testing.T) {
	for _, c := range []struct {
		v       string
		refused bool // a duration that is not positive
	}{{"90s", false}, {"10m", false}, {"0s", true}, {"-1s", true}} {
		want := func(member string) string {
			if c.refused {
				return member + ": must be positive"
			}
			return ""
		}
		e, in := upstreamTimeoutYAML(c.v, "", c.v)
		expectCheckConfig(t, "egress "+c.v, e, want("egress.upstream_timeout"))
		expectCheckConfig(t, "ingress "+c.v, in, want("ingress.upstream_timeout"))
		e, _ = upstreamTimeoutYAML("", c.v, "")
		expectCheckConfig(t, "route "+c.v, e, want("egress.routes[0].upstream_timeout"))
	}
	e, _ := upstreamTimeoutYAML("5", "", "")
	expectCheckConfig(t, "a number without a unit", e, "upstream_timeout")
}

// The members default as documented: the egress's and the ingress's to
// proxy.DefaultUpstreamTimeout, a route's to the egress's.
func TestProxyUpstreamTimeoutDefaults(t *testing.T) {
	for _, c := range []struct {
		name                   string
		egress, route, ingress string
		wantEgress, wantRoute  time.Duration
		wantIngress            time.Duration
	}{
		{name: "none", wantEgress: proxy.DefaultUpstreamTimeout, wantRoute: proxy.DefaultUpstreamTimeout, wantIngress: proxy.DefaultUpstreamTimeout},
		{name: "egress", egress: "2m", ingress: "7m", wantEgress: 2 * time.Minute, wantRoute: 2 * time.Minute, wantIngress: 7 * time.Minute},
		{name: "route", egress: "2m", route: "45s", wantEgress: 2 * time.Minute, wantRoute: 45 * time.Second, wantIngress: proxy.DefaultUpstreamTimeout},
	} {
		e, in := upstreamTimeoutYAML(c.egress, c.route, c.ingress)
		var ec, ic Config
		if err := kit.ParseYAML([]byte(e), &ec); err != nil {
			t.Fatal(err)
		}
		if err := kit.ParseYAML([]byte(in), &ic); err != nil {
			t.Fatal(err)
		}
		if err := checkProxy(&ec); err != nil {
			t.Fatal(err)
		}
		if err := checkProxy(&ic); err != nil {
			t.Fatal(err)
		}
		if got := *ec.Egress.UpstreamTimeout; got != c.wantEgress {
			t.Errorf("%s: egress %s", c.name, got)
		}
		if got := *ec.Egress.Routes[0].UpstreamTimeout; got != c.wantRoute {
			t.Errorf("%s: route %s", c.name, got)
		}
		if got := *ic.Ingress.UpstreamTimeout; got != c.wantIngress {
			t.Errorf("%s: ingress %s", c.name, got)
		}
	}
}

// The commands hand their upstream_timeout to the proxies: an application that does not
// answer gets the agent upstream_unavailable from the side whose wait ran out (the
// route's at the egress), and the application's request ends.
func TestProxyCommandsUpstreamTimeout(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	for _, side := range []string{"egress", "ingress"} {
		t.Run(side, func(t *testing.T) {
			gone := make(chan struct{})
			app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body) // net/http sees the client go only once the body is read
				<-r.Context().Done()
				close(gone)
			}))
			defer app.Close()
			egressWait, ingressWait := "", ""
			if side == "egress" {
				egressWait = "150ms"
			} else {
				ingressWait = "150ms"
			}
			inYAML := ingressYAML(witURL, ttsURL, app.URL)
			if ingressWait != "" {
				inYAML += "  upstream_timeout: " + ingressWait + "\n"
			}
			in := startProxy(t, inYAML)
			egYAML := egressYAML(witURL, ttsURL, in["ingress"])
			if egressWait != "" {
				egYAML = strings.Replace(egYAML, ", require_signed_response: true}", ", require_signed_response: true, upstream_timeout: "+egressWait+"}", 1)
			}
			out := startProxy(t, egYAML)
			req := startDialogRequest("POST", out["egress"]+"/t1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book","arguments":{}}}`)
			req.Header.Set("Content-Type", "application/json")
			res, body := testkit.Do(t, &http.Client{Transport: &http.Transport{}}, req)
			if res.StatusCode != http.StatusServiceUnavailable || errcode.CodeOf(problem.Read(res.StatusCode, body)) != errcode.UpstreamUnavailable ||
				!strings.Contains(string(body), "within 150ms") {
				t.Fatalf("%d %s", res.StatusCode, body)
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("the application's request did not end")
			}
		})
	}
}
