package proxyservice

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
)

// Issue 22 point 6: egress.allowed_hosts and egress.allowed_origins are checked by
// -check-config (docs/proxy.md, "Who may use the egress").
func TestIssue22Point6ProxyCheckConfig(t *testing.T) {
	good := checkedEgressYAML
	with := func(listen, lines string) string {
		return strings.Replace(good, "  listen: 127.0.0.1:0\n  tts", "  listen: "+listen+"\n"+lines+"  tts", 1)
	}
	for name, c := range map[string]struct {
		yaml, want string
	}{
		"hosts":                 {with("127.0.0.1:0", "  allowed_hosts: [localhost:9481, \"[::1]:9481\", a1-egress.internal]\n"), ""},
		"origins":               {with("127.0.0.1:0", "  allowed_origins: [\"http://localhost:3000\", \"chrome-extension://abcdef\"]\n"), ""},
		"hosts on a socket":     {with("unix:///run/a1/egress.sock", "  allowed_hosts: [localhost]\n"), ""},
		"wildcard host":         {with("127.0.0.1:0", "  allowed_hosts: [\"*\"]\n"), "egress.allowed_hosts"},
		"host with a scheme":    {with("127.0.0.1:0", "  allowed_hosts: [\"http://localhost:9481\"]\n"), "egress.allowed_hosts"},
		"host with a path":      {with("127.0.0.1:0", "  allowed_hosts: [localhost/x]\n"), "egress.allowed_hosts"},
		"host without a port":   {with("127.0.0.1:0", "  allowed_hosts: [\"localhost:\"]\n"), "egress.allowed_hosts"},
		"null origin":           {with("127.0.0.1:0", "  allowed_origins: [\"null\"]\n"), "egress.allowed_origins"},
		"wildcard origin":       {with("127.0.0.1:0", "  allowed_origins: [\"*\"]\n"), "egress.allowed_origins"},
		"origin with a path":    {with("127.0.0.1:0", "  allowed_origins: [\"http://localhost:3000/\"]\n"), "egress.allowed_origins"},
		"origin without scheme": {with("127.0.0.1:0", "  allowed_origins: [\"localhost:3000\"]\n"), "egress.allowed_origins"},
		"hosts as a string":     {with("127.0.0.1:0", "  allowed_hosts: localhost\n"), "allowed_hosts"},
	} {
		expectCheckConfig(t, name, c.yaml, c.want)
	}
}

// callEgress POSTs to url with Host host asking for a new dialog, with the fields of h.
func callEgress(t *testing.T, url, host string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req := startDialogRequest("POST", url, `{"task":"book"}`)
	req.Host = host
	for k, v := range h {
		req.Header[k] = v
	}
	return testkit.Do(t, http.DefaultClient, req)
}

// dialogtrust proxy with the default rule and with allowed_hosts and allowed_origins:
// a rebound Host and a disallowed Origin are refused with their codes, the configured
// ones pass, and the application sees the Host the egress sent the ingress.
func TestIssue22Point6ProxyCommand(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	hosts := make(chan string, 8)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		io.WriteString(w, "done")
	}))
	defer app.Close()
	in := startProxy(t, ingressYAML(witURL, ttsURL, app.URL))
	egress := egressYAML(witURL, ttsURL, in["ingress"]+"/invoke")
	byDefault := startProxy(t, egress)["egress"]
	listed := startProxy(t, egressWith(egress,
		"  allowed_hosts: [a1-egress.internal]\n  allowed_origins: [\"http://localhost:3000\"]\n"))["egress"]

	refused := func(what, url, host string, h http.Header, status int, code errcode.Code) {
		t.Helper()
		res, body := callEgress(t, url+"/t1", host, h)
		if res.StatusCode != status || errcode.CodeOf(problem.Read(res.StatusCode, body)) != code {
			t.Errorf("%s: %d %s, want %d %s", what, res.StatusCode, body, status, code)
		}
	}
	refused("rebound name", byDefault, "evil.example.com", nil, http.StatusMisdirectedRequest, errcode.HostNotAllowed)
	refused("evil origin", byDefault, "", http.Header{"Origin": {"http://evil.example.com"}}, http.StatusForbidden, errcode.OriginNotAllowed)
	refused("default replaced", listed, "", nil, http.StatusMisdirectedRequest, errcode.HostNotAllowed)
	refused("origin not listed", listed, "a1-egress.internal", http.Header{"Origin": {"http://localhost:3001"}}, http.StatusForbidden, errcode.OriginNotAllowed)
	select {
	case h := <-hosts:
		t.Fatalf("a refused request reached the application (Host %q)", h)
	default:
	}

	for what, c := range map[string]struct {
		url, host string
		h         http.Header
	}{
		"default":       {byDefault, "", nil},
		"own origin":    {byDefault, "", http.Header{"Origin": {byDefault}}},
		"listed":        {listed, "a1-egress.internal", nil},
		"listed origin": {listed, "a1-egress.internal", http.Header{"Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"same-site"}}},
	} {
		if res, body := callEgress(t, c.url+"/t1", c.host, c.h); res.StatusCode != 200 || string(body) != "done" {
			t.Errorf("%s: %d %s", what, res.StatusCode, body)
			continue
		}
		if h := <-hosts; h != strings.TrimPrefix(in["ingress"], "http://") {
			t.Errorf("%s: the application saw Host %q, the egress sent the ingress %q", what, h, in["ingress"])
		}
	}
}
