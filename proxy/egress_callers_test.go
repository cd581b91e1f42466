package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Issue 22 point 6: the egress signs for any web page on the machine (DNS rebinding).
// These tests are named after it: TestIssue22Point6*.

// watch counts what an egress fetches and signs with: the requests to the TTS and the
// WIT credentials its signing asks for. Between the proxies, pair.sent records what
// went out.
type watch struct{ tts, wits atomic.Int32 }

type countingRT struct {
	n    *atomic.Int32
	next http.RoundTripper
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

type countingSource struct {
	n *atomic.Int32
	wit.Source
}

func (c countingSource) Credential(ctx context.Context) (*wit.Credential, error) {
	c.n.Add(1)
	return c.Source.Credential(ctx)
}

// egressOf wraps the egress configuration's TTS client and WIT source to count, and
// keeps the configuration in *keep (nil: not kept) to build more egresses of the pair.
func (w *watch) egressOf(keep *proxy.EgressConfig) func(*proxy.EgressConfig) {
	return func(c *proxy.EgressConfig) {
		tts := *c.TTS
		tts.HTTPClient = &http.Client{Transport: countingRT{&w.tts, http.DefaultTransport}}
		c.TTS = &tts
		c.WIT = countingSource{&w.wits, c.WIT}
		if keep != nil {
			*keep = *c
		}
	}
}

// initialize is the body the MCP conformance suite's dns-rebinding-protection scenario
// sends (@modelcontextprotocol/conformance 0.1.16).
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conformance-dns-rebinding-test","version":"1.0.0"}}}`

// callAs POSTs initialize to url through c with Host host ("" : the URL's) and the
// fields of h.
func callAs(t *testing.T, c *http.Client, url, host string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(initialize))
	mustOK(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range h {
		req.Header[k] = v
	}
	if host != "" {
		req.Host = host
	}
	res, err := c.Do(req)
	mustOK(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	mustOK(t, err)
	return res, b
}

// expectRefused checks a refusal's status and code.
func expectRefused(t *testing.T, what string, res *http.Response, body []byte, status int, code errcode.Code) {
	t.Helper()
	if res.StatusCode != status || errcode.CodeOf(problem.Read(res.StatusCode, body)) != code {
		t.Errorf("%s: %d %s, want %d %s", what, res.StatusCode, body, status, code)
	}
}

// expectHostOrOriginRefused checks the refusal of a request whose Host is not allowed
// (421 host_not_allowed) or, withOrigin, whose Origin is not (403 origin_not_allowed).
func expectHostOrOriginRefused(t *testing.T, what string, res *http.Response, body []byte, withOrigin bool) {
	t.Helper()
	if withOrigin {
		expectRefused(t, what, res, body, http.StatusForbidden, errcode.OriginNotAllowed)
		return
	}
	expectRefused(t, what, res, body, http.StatusMisdirectedRequest, errcode.HostNotAllowed)
}

// nothingDone checks that no Txn-Token was fetched, no WIT taken to sign, nothing sent
// to the ingress and nothing reached the application.
func nothingDone(t *testing.T, p *pair, w *watch) {
	t.Helper()
	p.mu.Lock()
	sent := p.sent
	p.mu.Unlock()
	if n, m := w.tts.Load(), w.wits.Load(); n != 0 || m != 0 || sent != nil || p.app.hits() != 0 {
		t.Fatalf("a refused caller got %d TTS requests, %d WIT uses, a request sent (%v), %d at the application", n, m, sent != nil, p.app.hits())
	}
}

func egressPort(t *testing.T, p *pair) (host, port string) {
	host = strings.TrimPrefix(p.egress.URL, "http://")
	_, port, err := net.SplitHostPort(host)
	mustOK(t, err)
	return host, port
}

// A page whose name was rebound to 127.0.0.1 sends its own name as Host, asking for a
// new dialog: refused with host_not_allowed (421) before any Txn-Token is fetched or
// anything is signed. The loopback names at the listener's port pass.
func TestIssue22Point6ReboundHostRefused(t *testing.T) {
	w := &watch{}
	p := newPair(t, pairOptions{stateful: true, egress: w.egressOf(nil)})
	self, port := egressPort(t, p)
	other := "1"
	if port == "1" {
		other = "2"
	}
	for _, host := range []string{
		"evil.example.com", "evil.example.com:" + port, "EVIL.example.com:" + port,
		"localhost:" + other,                 // another local server's port (a front proxy keeping Host)
		"127.0.0.1",                          // port 80
		"localhost.:" + port,                 // not the name, however it resolves
		"127.0.0.2:" + port, "[::2]:" + port, // another address than the listener's
		"127.0.0.1.nip.io:" + port,
	} {
		res, body := callAs(t, http.DefaultClient, p.egress.URL+"/t1", host, start())
		expectRefused(t, host, res, body, http.StatusMisdirectedRequest, errcode.HostNotAllowed)
	}
	// The refusal comes first: a path with no route gets it too.
	res, body := callAs(t, http.DefaultClient, p.egress.URL+"/nowhere", "evil.example.com", nil)
	expectRefused(t, "no route", res, body, http.StatusMisdirectedRequest, errcode.HostNotAllowed)
	nothingDone(t, p, w)

	for _, host := range []string{self, "localhost:" + port, "LocalHost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		if res, body := callAs(t, http.DefaultClient, p.egress.URL+"/t1", host, start()); res.StatusCode != 200 {
			t.Errorf("%s: %d %s", host, res.StatusCode, body)
		}
	}
	if w.tts.Load() == 0 || w.wits.Load() == 0 || p.app.hits() != 5 {
		t.Fatalf("the allowed callers: %d TTS requests, %d WIT uses, %d at the application", w.tts.Load(), w.wits.Load(), p.app.hits())
	}
}

// A browser's request from another origin is refused with origin_not_allowed (403)
// before anything is fetched or signed, and so is one without an Origin that Fetch
// Metadata shows came from elsewhere; the egress's own origin and non-browser clients
// pass.
func TestIssue22Point6OriginRefused(t *testing.T) {
	w := &watch{}
	p := newPair(t, pairOptions{stateful: true, egress: w.egressOf(nil)})
	self, port := egressPort(t, p)
	for what, h := range map[string]http.Header{
		"evil origin":           {"Origin": {"http://evil.example.com"}},
		"evil origin, port":     {"Origin": {"http://evil.example.com:" + port}},
		"null origin":           {"Origin": {"null"}},
		"another loopback name": {"Origin": {"http://localhost:" + port}}, // Host is 127.0.0.1:port
		"https origin":          {"Origin": {"https://" + self}},
		"two origins":           {"Origin": {"http://" + self, "http://" + self}},
		"cross-site image":      {"Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"no-cors"}},
		"same-site navigation":  {"Sec-Fetch-Site": {"same-site"}, "Sec-Fetch-Mode": {"navigate"}},
		"typed into the bar":    {"Sec-Fetch-Site": {"none"}, "Sec-Fetch-Mode": {"navigate"}},
		"two sites":             {"Sec-Fetch-Site": {"same-origin", "cross-site"}},
	} {
		h[proxy.StartDialogField] = []string{"?1"}
		res, body := callAs(t, http.DefaultClient, p.egress.URL+"/t1", "", h)
		expectRefused(t, what, res, body, http.StatusForbidden, errcode.OriginNotAllowed)
	}
	nothingDone(t, p, w)

	for what, h := range map[string]http.Header{
		"own origin":        {"Origin": {"http://" + self}, "Sec-Fetch-Site": {"same-origin"}},
		"own origin, case":  {"Origin": {"HTTP://" + self}},
		"same-origin GET":   {"Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"cors"}},
		"node fetch":        {"Sec-Fetch-Mode": {"cors"}},
		"no browser at all": {},
	} {
		h[proxy.StartDialogField] = []string{"?1"}
		if res, body := callAs(t, http.DefaultClient, p.egress.URL+"/t1", "", h); res.StatusCode != 200 {
			t.Errorf("%s: %d %s", what, res.StatusCode, body)
		}
	}
}

// egressServer serves an egress built from cfg on a loopback listener of its own.
func egressServer(t *testing.T, cfg proxy.EgressConfig) *httptest.Server {
	eg, err := proxy.NewEgress(cfg)
	mustOK(t, err)
	srv := httptest.NewServer(eg)
	t.Cleanup(srv.Close)
	return srv
}

// egress.allowed_hosts replaces the default names (exact, any case) and
// egress.allowed_origins adds browser origins to the egress's own.
func TestIssue22Point6AllowedHostsAndOrigins(t *testing.T) {
	w := &watch{}
	var cfg proxy.EgressConfig
	p := newPair(t, pairOptions{stateful: true, egress: w.egressOf(&cfg)})
	cfg.AllowedHosts = []string{"A1-Egress.internal", "localhost:9481"}
	cfg.AllowedOrigins = []string{"http://localhost:3000", "chrome-extension://abcdefghijklmnop"}
	srv := egressServer(t, cfg)
	self := strings.TrimPrefix(srv.URL, "http://")
	for what, c := range map[string]struct {
		host string
		h    http.Header
	}{
		"the default replaced":   {self, nil},
		"the name at a port":     {"a1-egress.internal:80", nil},
		"the port at a name":     {"127.0.0.1:9481", nil},
		"a rebound name":         {"evil.example.com", nil},
		"origin of another port": {"a1-egress.internal", http.Header{"Origin": {"http://localhost:3001"}}},
	} {
		res, body := callAs(t, http.DefaultClient, srv.URL+"/t1", c.host, c.h)
		expectHostOrOriginRefused(t, what, res, body, c.h != nil)
	}
	nothingDone(t, p, w)
	for what, c := range map[string]struct {
		host string
		h    http.Header
	}{
		"a listed name":      {"a1-egress.internal", nil},
		"a listed port":      {"LOCALHOST:9481", nil},
		"a listed origin":    {"localhost:9481", http.Header{"Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"same-site"}}},
		"an extension":       {"localhost:9481", http.Header{"Origin": {"chrome-extension://abcdefghijklmnop"}, "Sec-Fetch-Site": {"cross-site"}}},
		"the own origin too": {"a1-egress.internal", http.Header{"Origin": {"http://a1-egress.internal"}}},
	} {
		h := http.Header{proxy.StartDialogField: {"?1"}}
		for k, v := range c.h {
			h[k] = v
		}
		if res, body := callAs(t, http.DefaultClient, srv.URL+"/t1", c.host, h); res.StatusCode != 200 {
			t.Errorf("%s: %d %s", what, res.StatusCode, body)
		}
	}
}

// What EgressConfig.AllowedHosts and AllowedOrigins take; NewEgress refuses the rest.
func TestIssue22Point6AllowedEntries(t *testing.T) {
	for _, c := range []struct {
		hosts, origins []string
		ok             bool
	}{
		{[]string{"localhost:9480", "[::1]:9480", "127.0.0.1", "a1-egress.internal", "LocalHost:1", "a_b.local"}, nil, true},
		{nil, []string{"http://localhost:3000", "https://agent.example", "chrome-extension://abcdef", "HTTP://LOCALHOST"}, true},
		{[]string{""}, nil, false},
		{[]string{"*"}, nil, false},
		{[]string{"http://localhost"}, nil, false},
		{[]string{"localhost/x"}, nil, false},
		{[]string{"user@localhost"}, nil, false},
		{[]string{"localhost:"}, nil, false},
		{[]string{"localhost:0"}, nil, false},
		{[]string{"localhost:65536"}, nil, false},
		{[]string{"localhost:09480"}, nil, false},
		{[]string{"::1"}, nil, false},
		{[]string{"[::1"}, nil, false},
		{[]string{"[127.0.0.1]"}, nil, false},
		{[]string{"local host"}, nil, false},
		{[]string{" localhost"}, nil, false},
		{[]string{"localhost:80?x"}, nil, false},
		{nil, []string{"null"}, false},
		{nil, []string{"*"}, false},
		{nil, []string{""}, false},
		{nil, []string{"http://"}, false},
		{nil, []string{"localhost:3000"}, false},
		{nil, []string{"http://localhost:3000/"}, false},
		{nil, []string{"http://localhost:3000/app"}, false},
		{nil, []string{"http://user@localhost"}, false},
		{nil, []string{"http://localhost:3000?x"}, false},
		{nil, []string{"http://*.example"}, false},
	} {
		err := proxy.CheckAllowedHosts(c.hosts)
		if err == nil {
			err = proxy.CheckAllowedOrigins(c.origins)
		}
		if (err == nil) != c.ok || err != nil && errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Errorf("%q %q: %v", c.hosts, c.origins, err)
		}
		_, err = proxy.NewEgress(proxy.EgressConfig{AllowedHosts: c.hosts, AllowedOrigins: c.origins, Self: identifier.MustParse("wimse://a.example/agent/a1"), WIT: countingSource{new(atomic.Int32), nil},
			Routes: []proxy.Route{{Prefix: "/", Upstream: "http://127.0.0.1:1", Proof: proof.WPT}}})
		if (err == nil) != c.ok {
			t.Errorf("NewEgress %q %q: %v", c.hosts, c.origins, err)
		}
	}
}

// On a Unix socket no browser connects and the Host names nothing: any Host passes by
// default, and allowed_hosts, when given, applies there too. No origin is the egress's
// own there: a browser's fields are refused unless allowed_origins lists the Origin.
func TestIssue22Point6UnixSocket(t *testing.T) {
	w := &watch{}
	var cfg proxy.EgressConfig
	p := newPair(t, pairOptions{stateful: true, egress: w.egressOf(&cfg)})
	dir := t.TempDir()
	serveUnix := func(name string, cfg proxy.EgressConfig) *http.Client {
		eg, err := proxy.NewEgress(cfg)
		mustOK(t, err)
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		mustOK(t, err)
		srv := &http.Server{Handler: eg}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return unixClient(filepath.Join(dir, name))
	}
	byDefault := serveUnix("default.sock", cfg)
	listed := cfg
	listed.AllowedHosts = []string{"localhost"}
	listed.AllowedOrigins = []string{"http://localhost:3000"}
	strict := serveUnix("strict.sock", listed)

	for what, c := range map[string]struct {
		c    *http.Client
		host string
		h    http.Header
	}{
		"origin of the Host":     {byDefault, "egress", http.Header{"Origin": {"http://egress"}}},
		"localhost origin":       {byDefault, "localhost", http.Header{"Origin": {"http://localhost"}}},
		"same-origin, no Origin": {byDefault, "localhost", http.Header{"Sec-Fetch-Site": {"same-origin"}}},
		"a Host not listed":      {strict, "egress", nil},
		"a rebound name":         {strict, "evil.example.com", nil},
	} {
		res, body := callAs(t, c.c, "http://egress/t1", c.host, c.h)
		expectHostOrOriginRefused(t, what, res, body, c.h != nil)
	}
	nothingDone(t, p, w)
	for what, c := range map[string]struct {
		c    *http.Client
		host string
		h    http.Header
	}{
		"net/http's URL host": {byDefault, "egress", nil},
		"curl's localhost":    {byDefault, "localhost", nil},
		"any name":            {byDefault, "evil.example.com", nil},
		"node fetch":          {byDefault, "localhost", http.Header{"Sec-Fetch-Mode": {"cors"}}},
		"the listed Host":     {strict, "localhost", nil},
		"a listed origin":     {strict, "localhost", http.Header{"Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"same-site"}}},
	} {
		h := http.Header{proxy.StartDialogField: {"?1"}}
		for k, v := range c.h {
			h[k] = v
		}
		if res, body := callAs(t, c.c, "http://egress/t1", c.host, h); res.StatusCode != 200 {
			t.Errorf("%s: %d %s", what, res.StatusCode, body)
		}
	}
}

// The application behind the ingress gets the Host the caller sent the ingress (with
// X-Forwarded-Host), not the upstream address the ingress dials, on TCP and on a Unix
// socket: its own DNS-rebinding protection judges the name it was reached by.
func TestIssue22Point6ApplicationSeesOriginalHost(t *testing.T) {
	dir := t.TempDir()
	appLn, err := net.Listen("unix", filepath.Join(dir, "app.sock"))
	mustOK(t, err)
	for name, o := range map[string]pairOptions{
		"tcp":  {stateful: true},
		"unix": {stateful: true, appListener: appLn, ingress: func(c *proxy.IngressConfig) { c.Upstream = "unix://" + filepath.Join(dir, "app.sock") }},
	} {
		p := newPair(t, o)
		res, body := post(t, p.egress.URL+"/t1", `{}`, start())
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", name, res.StatusCode, body)
		}
		want := strings.TrimPrefix(p.ingress.URL, "http://")
		if r := p.app.last(); r.Host != want || r.Header.Get("X-Forwarded-Host") != want {
			t.Errorf("%s: the application saw Host %q, X-Forwarded-Host %q; the caller sent %q", name, r.Host, r.Header.Get("X-Forwarded-Host"), want)
		}
	}
}

// The two requests of the MCP conformance suite's dns-rebinding-protection scenario
// (@modelcontextprotocol/conformance 0.1.16: an initialize POST with Host and Origin
// http://Host, first a rebound name, then the URL's own host), sent to the egress of a
// pair whose application protects itself as the MCP TypeScript SDK's localhost host
// validation does: the first is refused with a 4xx at the egress, before anything is
// fetched or signed, the second is answered 2xx by the application, as the scenario
// wants of a local server it talks to directly.
func TestIssue22Point6ConformanceScenario(t *testing.T) {
	w := &watch{}
	p := newPair(t, pairOptions{stateful: true, egress: w.egressOf(nil), app: localhostHostValidation})
	const evil = "evil.example.com"
	res, body := callAs(t, http.DefaultClient, p.egress.URL+"/t1", evil, http.Header{"Origin": {"http://" + evil}})
	if res.StatusCode < 400 || res.StatusCode >= 500 {
		t.Fatalf("the rebound request: %d %s, want a 4xx", res.StatusCode, body)
	}
	nothingDone(t, p, w)
	self := strings.TrimPrefix(p.egress.URL, "http://")
	res, body = callAs(t, http.DefaultClient, p.egress.URL+"/t1", self, http.Header{"Origin": {"http://" + self}})
	if res.StatusCode < 200 || res.StatusCode >= 300 {
		t.Fatalf("the valid request: %d %s, want a 2xx", res.StatusCode, body)
	}
	if h := p.app.last().Host; h != strings.TrimPrefix(p.ingress.URL, "http://") {
		t.Fatalf("the application judged Host %q", h)
	}
}

// localhostHostValidation answers as an MCP server with the TypeScript SDK's
// localhostHostValidation (createMcpExpressApp bound to a loopback address): 403 with a
// JSON-RPC error for a Host whose name is not a loopback one, else an initialize
// result.
func localhostHostValidation(w http.ResponseWriter, r *http.Request, _ []byte) {
	name := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		name = h
	}
	w.Header().Set("Content-Type", "application/json")
	switch name {
	case "localhost", "127.0.0.1", "::1":
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"t1","version":"1"}}}`)
	default:
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Invalid Host: `+strconv.Quote(r.Host)+`"},"id":null}`)
	}
}

// A request-target in absolute form names the host in place of the Host field (RFC 9112
// section 3.2.2), as a browser sends when the egress is set as its HTTP proxy: that
// host is judged, whatever the Host field says.
func TestIssue22Point6AbsoluteForm(t *testing.T) {
	w := &watch{}
	p := newPair(t, pairOptions{stateful: true, egress: w.egressOf(nil)})
	self, _ := egressPort(t, p)
	for target, want := range map[string]int{
		"http://evil.example.com/t1":  http.StatusMisdirectedRequest,
		"http://example.com/t1":       http.StatusMisdirectedRequest,
		"http://" + self + "/nowhere": http.StatusNotFound, // the Host field's name is the rebound one: the target's counts
	} {
		conn, err := net.Dial("tcp", self)
		mustOK(t, err)
		host := self
		if strings.Contains(target, self) {
			host = "evil.example.com"
		}
		_, err = io.WriteString(conn, "POST "+target+" HTTP/1.1\r\nHost: "+host+"\r\nDialogtrust-Start-Dialog: ?1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
		mustOK(t, err)
		b, _ := io.ReadAll(conn)
		conn.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 "+strconv.Itoa(want)+" ") {
			t.Errorf("%s with Host %s: %.80q, want %d", target, host, b, want)
		}
	}
	nothingDone(t, p, w)
}
