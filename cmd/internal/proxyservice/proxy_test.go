package proxyservice

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit/kittest"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// proxyDomain runs trust domain a.example in process: a WIT issuer that authenticates
// workloads in development mode and a TTS that takes self-signed subject tokens.
func proxyDomain(t *testing.T) (witURL, ttsURL string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	witSrv := httptest.NewUnstartedServer(nil)
	witURL = "http://" + witSrv.Listener.Addr().String()
	witKey, err := keys.Generate(keys.ES256)
	must(err)
	rot, err := keys.NewStaticRotator(witKey, keys.RotationConfig{Retain: 2 * time.Hour})
	must(err)
	dev, err := witissuer.NewDev(nil, []string{"wimse://a.example/"}, witissuer.DevOptions{})
	must(err)
	ws, err := witissuer.New(witissuer.Config{Issuer: witURL, Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{"a.example"}}, Routes: []witissuer.Route{{Path: "/v1/wit", Methods: []witissuer.Authenticator{dev}}}})
	must(err)
	witSrv.Config.Handler = ws.Handler()
	witSrv.Start()
	t.Cleanup(witSrv.Close)

	ttsSrv := httptest.NewUnstartedServer(nil)
	ttsURL = "http://" + ttsSrv.Listener.Addr().String()
	witKeys, err := keys.NewRemoteSet(t.Context(), witURL+"/.well-known/jwks.json")
	must(err)
	ttsKey, err := keys.Generate(keys.ES256)
	must(err)
	replay := store.NewMemory()
	wits := wit.NewValidator(keys.NewTrust().AddTrustDomain("a.example", witKeys))
	ts, err := tts.New(tts.Config{
		Issuer: ttsURL, TrustDomains: []string{"a.example"}, Keys: keys.NewRing(ttsKey, nil),
		Authenticators:  oauth.WIMSEAuthenticators(wits, replay, ttsURL+tts.PathToken),
		SubjectHandlers: []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{ttsURL}, tts.SelfSignedOptions{})},
		Replay:          replay,
		Policy:          tts.Policy{Rules: []tts.Rule{{Workload: "wimse://a.example/", SubjectScopes: []string{"trip.book"}}}},
	})
	must(err)
	ttsSrv.Config.Handler = ts.Handler()
	ttsSrv.Start()
	t.Cleanup(ttsSrv.Close)
	return witURL, ttsURL
}

// headYAML is how each test proxy's configuration starts: the ops listener on
// loopback, the trust domain it serves, its workload (development auth at the WIT
// issuer witIssuer), and the WIT issuers it trusts, as pairs of trust domain and
// issuer URL (their keys by jwks_url).
func headYAML(trustDomain, workload, witIssuer string, wits ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:0\ntrust_domains: [%s]\nworkload: {id: %s, wit_issuer: %s, auth: development}\nwits:\n", trustDomain, workload, witIssuer)
	for i := 0; i+1 < len(wits); i += 2 {
		fmt.Fprintf(&b, "  - {trust_domain: %s, jwks_url: %s/.well-known/jwks.json}\n", wits[i], wits[i+1])
	}
	return b.String()
}

// egressYAML is agent a1's proxy: egress only, one route to t1's ingress.
func egressYAML(witURL, ttsURL, ingressURL string) string {
	return headYAML("a.example", "wimse://a.example/agent/a1", witURL, "a.example", witURL) + fmt.Sprintf(`egress:
  listen: 127.0.0.1:0
  tts: {token_endpoint: %[1]s/token, issuer: %[1]s, self_signed_subject: alice@a.example}
  routes:
    - {prefix: /t1, upstream: %[2]s, audience: a.example, scope: trip.book, recipient: "https://t1.a.example/", require_signed_response: true}
`, ttsURL, ingressURL)
}

// ingressYAML is tool t1's proxy: ingress only, stateless, signing its responses.
func ingressYAML(witURL, ttsURL, appURL string) string {
	return headYAML("a.example", "wimse://a.example/tool/t1", witURL, "a.example", witURL) + fmt.Sprintf(`ingress:
  listen: 127.0.0.1:0
  upstream: %[2]s
  audiences: ["https://t1.a.example/"]
  txn_tokens: {jwks_url: %[1]s/.well-known/jwks.json}
  require_txn_token: true
  sign_responses: true
`, ttsURL, appURL)
}

// checkedEgressYAML and checkedIngressYAML are egressYAML and ingressYAML for
// -check-config alone: nothing listens at their addresses.
var (
	checkedEgressYAML  = egressYAML("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3/invoke")
	checkedIngressYAML = ingressYAML("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3")
)

// egressWith adds lines ("  key: value\n" each) to the egress section of yaml, after
// its listen member.
func egressWith(yaml, lines string) string {
	return strings.Replace(yaml, "egress:\n  listen: 127.0.0.1:0\n", "egress:\n  listen: 127.0.0.1:0\n"+lines, 1)
}

var listeningRE = regexp.MustCompile(`proxy listening on (\S+) \((.*)\)`)

// startProxyLogged runs "dialogtrust proxy -config" in process until the test ends and
// returns the URLs of its listeners by name (ops, egress, ingress) and the command's
// log (stderr).
func startProxyLogged(t *testing.T, yaml string) (map[string]string, *testkit.SyncBuffer) {
	t.Helper()
	file := testkit.WriteTemp(t, "proxy.yaml", yaml)
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- kit.Run(ctx, Program, []string{"-config", file}, nil, stdout, stderr, func(u string) { ready <- u })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy stopped with %v\n%s", err, stderr.String())
		}
	})
	select {
	case <-ready:
	case err := <-done:
		done <- nil // for the cleanup, which has nothing left to stop
		t.Fatalf("proxy: %v\n%s", err, stderr.String())
	}
	m := listeningRE.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no listening line: %q", stdout.String())
	}
	urls := map[string]string{"ops": m[1]}
	for _, part := range strings.Split(m[2], ", ") {
		name, u, _ := strings.Cut(part, " ")
		urls[name] = u
	}
	return urls, stderr
}

// startProxy runs "dialogtrust proxy -config" in process until the test ends and
// returns the URLs of its listeners by name (ops, egress, ingress).
func startProxy(t *testing.T, yaml string) map[string]string {
	t.Helper()
	urls, _ := startProxyLogged(t, yaml)
	return urls
}

// startDialogRequest is a request to url asking the egress to start a dialog, with
// body (none when empty).
func startDialogRequest(method, url, body string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set(proxy.StartDialogField, "?1")
	return req
}

// postStartDialog POSTs body to url through c asking the egress to start a dialog,
// and returns the response with its body read.
func postStartDialog(t *testing.T, c *http.Client, url, body string) (*http.Response, []byte) {
	t.Helper()
	return testkit.Do(t, c, startDialogRequest("POST", url, body))
}

// mustBookThrough starts a dialog with a task through the egress at url, which the
// application answers with "done", and returns the dialog of the answer.
func mustBookThrough(t *testing.T, c *http.Client, url string) *dialog.Context {
	t.Helper()
	res, body := postStartDialog(t, c, url, `{"task":"book"}`)
	dc, _ := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || string(body) != "done" || dc == nil {
		t.Fatalf("%d %s %v", res.StatusCode, body, res.Header)
	}
	return dc
}

// checkProxyConfig runs "dialogtrust proxy -check-config" on yaml.
func checkProxyConfig(t *testing.T, yaml string) (stdout string, err error) {
	t.Helper()
	file := testkit.WriteTemp(t, "p.yaml", yaml)
	var out strings.Builder
	err = kit.Run(t.Context(), Program, []string{"-check-config", "-config", file}, nil, &out, io.Discard, nil)
	return out.String(), err
}

// expectCheckConfig checks that -check-config accepts yaml when want is empty, else
// that it refuses it with an error that says want.
func expectCheckConfig(t *testing.T, name, yaml, want string) {
	t.Helper()
	stdout, err := checkProxyConfig(t, yaml)
	switch {
	case want == "" && (err != nil || stdout != "proxy: configuration ok\n"):
		t.Errorf("%s: %v %q", name, err, stdout)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: %v, want %q", name, err, want)
	}
}

// headersApp is an application that answers "done" and passes the header of each
// request it gets on seen (up to four unread); it stops when the test ends.
func headersApp(t *testing.T) (*httptest.Server, chan http.Header) {
	seen := make(chan http.Header, 4)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		io.WriteString(w, "done")
	}))
	t.Cleanup(app.Close)
	return app, seen
}

// A pair of proxy commands, a1's egress and t1's ingress, between a Go client and an
// application: the application sees the verified sender and dialog, and the
// operational routes answer.
func TestProxyCommandPair(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	app, seen := headersApp(t)
	in := startProxy(t, ingressYAML(witURL, ttsURL, app.URL))
	out := startProxy(t, egressYAML(witURL, ttsURL, in["ingress"]+"/invoke"))

	dc := mustBookThrough(t, http.DefaultClient, out["egress"]+"/t1")
	h := <-seen
	if h.Get(proxy.VerifiedSenderField) != "wimse://a.example/agent/a1" || h.Get(proxy.VerifiedDialogField) != dc.DLG() || h.Get(proxy.VerifiedTxnTokenClaimsField) == "" {
		t.Fatalf("the application saw %v", h)
	}
	for _, u := range []string{out["ops"], in["ops"]} {
		for _, p := range []string{service.PathHealthz, service.PathReadyz, service.PathMetrics} {
			status, b := testkit.Get(t, u+p)
			if status != 200 {
				t.Errorf("%s%s: %d %s", u, p, status, b)
			}
			if p == service.PathMetrics && u == in["ops"] && !strings.Contains(string(b), `dialogtrust_proxy_requests_total{side="ingress",status="200"} 1`) {
				t.Errorf("ingress metrics lack the request:\n%s", b)
			}
		}
	}
}

// -check-config opens nothing and refuses what the proxy could not run safely.
func TestProxyCheckConfig(t *testing.T) {
	good := checkedEgressYAML
	const handoffSection = "handoff: {key_file: a1.jwk, trust_file: trust.json}\n"
	delegating := func(host string) string {
		return strings.Replace(good, "require_signed_response: true}", "require_signed_response: true, delegate: wimse://a.example/tool/t1, "+host+"}", 1)
	}
	for name, c := range map[string]struct {
		yaml, want string
	}{
		"good egress":       {good, ""},
		"good ingress":      {checkedIngressYAML, ""},
		"neither side":      {"trust_domains: [a.example]\nworkload: {id: wimse://a.example/a}\nwits: [{trust_domain: a.example, jwks_file: x}]\n", "egress section, an ingress section"},
		"public egress":     {strings.Replace(good, "  listen: 127.0.0.1:0", "  listen: 0.0.0.0:9481", 1), "must listen on loopback"},
		"egress on socket":  {strings.Replace(good, "  listen: 127.0.0.1:0", "  listen: unix:///run/a1/egress.sock\n  socket_mode: \"0600\"", 1), ""},
		"relative socket":   {strings.Replace(good, "  listen: 127.0.0.1:0", "  listen: unix://run/egress.sock", 1), "absolute path"},
		"bad socket mode":   {strings.Replace(good, "  listen: 127.0.0.1:0", "  listen: unix:///run/egress.sock\n  socket_mode: \"4777\"", 1), "socket_mode"},
		"unquoted mode":     {strings.Replace(good, "  listen: 127.0.0.1:0", "  listen: unix:///run/egress.sock\n  socket_mode: 0660", 1), "in quotes"},
		"mode without sock": {strings.Replace(good, "  listen: 127.0.0.1:0", "  listen: 127.0.0.1:0\n  socket_mode: \"0660\"", 1), "only with a Unix socket"},
		"egress to socket":  {strings.Replace(good, "upstream: http://127.0.0.1:3/invoke", "upstream: unix:///run/t1.sock", 1), "absolute http(s) URL"},
		"app on socket":     {ingressYAML("http://127.0.0.1:1", "http://127.0.0.1:2", "unix:///run/app/app.sock") + "  upstream_path: /mcp\n", ""},
		"app path, no sock": {checkedIngressYAML + "  upstream_path: /mcp\n", "only for a Unix socket upstream"},
		"ingress on socket": {strings.Replace(checkedIngressYAML, "  listen: 127.0.0.1:0\n  upstream", "  listen: unix:///run/in.sock\n  upstream", 1), "faces remote callers on TCP"},
		"plain HTTP remote": {strings.Replace(good, "upstream: http://127.0.0.1:3/invoke", "upstream: http://t1.example/invoke", 1), "plain HTTP only to loopback"},
		"unknown member":    {good + "egres: {}\n", "egres"},
		"bad proof":         {strings.Replace(good, "require_signed_response: true", "proof: magic", 1), "httpsig or wpt"},
		"signed WPT":        {strings.Replace(good, "require_signed_response: true", "proof: wpt, require_signed_response: true", 1), "needs proof httpsig"},
		"good delegate":     {delegating("host: mcp") + handoffSection, ""},
		"delegate, no host": {delegating("") + handoffSection, "delegate and host go together"},
		"bad host":          {delegating("host: grpc") + handoffSection, "mcp, a2a03 or a2a10"},
		"no handoff keys":   {delegating("host: a2a10"), "needs the handoff section"},
		"half a handoff":    {delegating("host: a2a10") + "handoff: {key_file: k.jwk}\n", "key_file and trust_file are required"},
		"delegate, no Txn":  {strings.Replace(delegating("host: mcp"), "audience: a.example, ", "", 1) + handoffSection, "delegate needs audience"},
		"named signers":     {strings.Replace(good, "require_signed_response: true", "require_signed_response: true, response_signers: [wimse://a.example/tool/t1, wimse://a.example/tool/]", 1), ""},
		"foreign signers":   {strings.Replace(good, "require_signed_response: true", "require_signed_response: true, response_signers: [wimse://b.example/tool/]", 1), "come from a.example"},
		"bad signer":        {strings.Replace(good, "require_signed_response: true", "require_signed_response: true, response_signers: [wimse://a.example/tool//]", 1), "response_signers"},
		"handoff hosts":     {checkedIngressYAML + "  handoff_hosts: [mcp, a2a10]\n" + handoffSection, ""},
		"hosts, no keys":    {checkedIngressYAML + "  handoff_hosts: [mcp]\n", "needs the handoff section"},
		"bad handoff host":  {checkedIngressYAML + "  handoff_hosts: [a2a]\n" + handoffSection, "mcp, a2a03 or a2a10"},
	} {
		expectCheckConfig(t, name, c.yaml, c.want)
	}
}

// End to end with software no one here wrote: the Python example client (httpx,
// examples/proxy/python) calls the example tool (Starlette on uvicorn) through a1's
// egress and t1's ingress. The tool reports the verified sender and dialog it saw, the
// egress's workload; a spoofed identity field never reaches it. The same examples run
// against dev --proxies --app in cmd/dialogtrust (TestDevAppPythonExample).
func TestProxyPythonHTTPXToStarlette(t *testing.T) {
	py := testkit.ExamplePython(t)
	witURL, ttsURL := proxyDomain(t)
	dir := testkit.ExamplesDir(filepath.Join("..", "..", ".."), "python")
	appURL, toolOut := testkit.StartExampleTool(t, exec.Command(py, filepath.Join(dir, "tool.py"), "127.0.0.1:0"))

	in := startProxy(t, ingressYAML(witURL, ttsURL, appURL))
	out := startProxy(t, egressYAML(witURL, ttsURL, in["ingress"]))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := testkit.RunExampleClient(t, exec.CommandContext(ctx, py, filepath.Join(dir, "client.py"), out["egress"], "/t1", "--json"), toolOut)
	dc, err := dialog.Parse(r.DialogContext)
	if err != nil {
		t.Fatalf("the client's Dialog-Context %q: %v", r.DialogContext, err)
	}
	testkit.CheckExampleRun(t, r, dc.DLG(), dc.Initiator().String(), "wimse://a.example/agent/a1", "trip.book")
}

// Two ingress instances for t1 share one Redis (store.type redis, stateful): a signed
// request captured on its way to one is a replay at the other, and the dialog the first
// established is known at the second. Needs DIALOGTRUST_TEST_REDIS (fails without it
// under CI=true).
func TestProxyIngressSharedRedis(t *testing.T) {
	addr := testkit.RedisAddr(t)
	witURL, ttsURL := proxyDomain(t)
	app, seen := headersApp(t)
	prefix := fmt.Sprintf("proxytest:%d:", time.Now().UnixNano())
	shared := strings.Replace(ingressYAML(witURL, ttsURL, app.URL), "  sign_responses: true\n",
		"  sign_responses: true\n  stateful: true\n  store: {type: redis, redis: {addrs: [\""+addr+"\"], prefix: \""+prefix+"\"}}\n", 1)
	in1, in2 := startProxy(t, shared), startProxy(t, shared)

	// A hop between the proxies that keeps the signed request it carried to in1.
	var captured *http.Request
	var capturedBody []byte
	hop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		capturedBody, _ = io.ReadAll(r.Body)
		out, _ := http.NewRequest(r.Method, in1["ingress"]+r.URL.RequestURI(), strings.NewReader(string(capturedBody)))
		out.Header = r.Header.Clone()
		captured = out.Clone(context.Background())
		res, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	defer hop.Close()
	out := startProxy(t, egressYAML(witURL, ttsURL, hop.URL+"/invoke"))

	res, b := postStartDialog(t, http.DefaultClient, out["egress"]+"/t1", `{"task":"book"}`)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	if h := <-seen; h.Get(proxy.VerifiedEstablishedField) != "true" {
		t.Fatalf("in1 did not establish the dialog: %v", h)
	}
	replay, _ := http.NewRequest(captured.Method, in2["ingress"]+captured.URL.RequestURI(), strings.NewReader(string(capturedBody)))
	replay.Header = captured.Header.Clone()
	res, b = testkit.Do(t, http.DefaultClient, replay)
	var doc struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &doc)
	if doc.Code != "replayed" || len(seen) != 0 {
		t.Fatalf("the replay at in2: %d %s", res.StatusCode, b)
	}
}

// The configuration example of docs/proxy.md passes -check-config.
func TestProxyDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "proxy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/proxy.md has no yaml example")
	}
	if _, err := checkProxyConfig(t, example); err != nil {
		t.Fatalf("the documented example: %v", err)
	}
}

// The ingress serves TLS with its certificate, and the egress verifies it with the
// roots of ca_file (and refuses the upstream without them).
func TestProxyCommandTLS(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get(proxy.VerifiedSenderField))
	}))
	defer app.Close()
	dir := t.TempDir()
	ca := kittest.NewCA(t, dir, "ca")
	cert, key := ca.Issue(t, dir, "ingress", x509.ExtKeyUsageServerAuth)
	in := startProxy(t, ingressYAML(witURL, ttsURL, app.URL)+"  tls: {cert_file: "+cert+", key_file: "+key+"}\n")
	if !strings.HasPrefix(in["ingress"], "https://127.0.0.1:") {
		t.Fatalf("ingress at %s", in["ingress"])
	}
	withRoots := egressWith(egressYAML(witURL, ttsURL, in["ingress"]), "  ca_file: "+ca.CertFile+"\n")
	for name, c := range map[string]struct {
		yaml   string
		status int
	}{"ca_file": {withRoots, 200}, "system roots": {egressYAML(witURL, ttsURL, in["ingress"]), 503}} {
		out := startProxy(t, c.yaml)
		res, b := postStartDialog(t, http.DefaultClient, out["egress"]+"/t1", `{}`)
		if res.StatusCode != c.status || (c.status == 200 && string(b) != "wimse://a.example/agent/a1") {
			t.Errorf("%s: %d %s", name, res.StatusCode, b)
		}
		if c.status == 503 && !strings.Contains(string(b), "upstream_unavailable") {
			t.Errorf("%s: %s", name, b)
		}
	}
}

// Handoffs through two proxy commands (handoff-context section 6, MCP): a1's egress
// makes the offer for a route with a delegate, t1's ingress with handoff_hosts accepts
// it, the application states "completed", and the agent reads the verified status.
func TestProxyCommandHandoff(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	dir := t.TempDir()
	a1Key, _ := keys.Generate(keys.ES256)
	t1Key, _ := keys.Generate(keys.ES256)
	for name, k := range map[string]*keys.PrivateKey{"a1.jwk": a1Key, "t1.jwk": t1Key} {
		b, err := k.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	trust, _ := json.Marshal(map[string]any{
		"wimse://a.example/agent/a1": map[string]any{"keys": []any{a1Key.Public()}},
		"wimse://a.example/tool/t1":  map[string]any{"keys": []any{t1Key.Public()}},
	})
	if err := os.WriteFile(filepath.Join(dir, "trust.json"), trust, 0o600); err != nil {
		t.Fatal(err)
	}
	section := func(key string) string {
		return fmt.Sprintf("handoff: {key_file: %s, trust_file: %s}\n", filepath.Join(dir, key), filepath.Join(dir, "trust.json"))
	}
	handoffThroughProxies(t, witURL, ttsURL, section("a1.jwk"), section("t1.jwk"))
}

// handoffThroughProxies runs a1's egress with the handoff section a1 and t1's ingress
// with t1, and makes an offer from a1 to t1 that t1's application completes: the
// offer is signed with a1's handoff key and verified with its public key in t1's
// trust, the status signed with t1's and verified in a1's.
func handoffThroughProxies(t *testing.T, witURL, ttsURL, a1, t1 string) {
	t.Helper()
	seen := make(chan http.Header, 4)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(proxy.HandoffStatusField, "completed")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"booked"}]}}`)
	}))
	defer app.Close()
	in := startProxy(t, ingressYAML(witURL, ttsURL, app.URL)+"  handoff_hosts: [mcp]\n"+t1)
	egress := strings.Replace(egressYAML(witURL, ttsURL, in["ingress"]+"/mcp"), "require_signed_response: true}",
		"require_signed_response: true, delegate: wimse://a.example/tool/t1, host: mcp}", 1)
	out := startProxy(t, egress+a1)

	send := func(dc string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", out["egress"]+"/t1", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proxy.HandoffField, "?1")
		if dc == "" {
			req.Header.Set(proxy.StartDialogField, "?1")
		} else {
			req.Header.Set(dialog.HeaderName, dc)
		}
		return testkit.Do(t, http.DefaultClient, req)
	}
	res, body := send("")
	// The ingress keeps its handoff records in memory: offers issued in the second it
	// started, or before, may have been seen by an earlier process and are rejected
	// with reason replay (section 8.4). The agent asks again with new offers, in the
	// same dialog, until its offers are issued after that second.
	deadline := time.Now().Add(3 * time.Second)
	for res.Header.Get(proxy.HandoffStatusField) == "rejected" && res.Header.Get(proxy.HandoffReasonField) == "replay" && time.Now().Before(deadline) {
		if len(seen) != 0 {
			t.Fatal("the application ran for a rejected offer")
		}
		res, body = send(res.Header.Get(dialog.HeaderName))
	}
	if res.StatusCode != 200 || res.Header.Get(proxy.HandoffStatusField) != "completed" || res.Header.Get(proxy.HandoffHopField) == "" {
		t.Fatalf("%d %s %v", res.StatusCode, body, res.Header)
	}
	h := <-seen
	if h.Get(proxy.VerifiedHandoffField) != "accepted" || h.Get(proxy.VerifiedHandoffFromField) != "wimse://a.example/agent/a1" ||
		h.Get(proxy.VerifiedHandoffHopField) != res.Header.Get(proxy.HandoffHopField) {
		t.Fatalf("the application saw %v", h)
	}
}

// The sidecar's local hops on Unix sockets: a1's egress listens on one (mode 0660 by
// default) and t1's ingress reaches its application on another; the hop between the
// two proxies is TCP. The socket is removed when the proxy stops.
func TestProxyCommandUnixSockets(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	dir := t.TempDir()
	appSock, egressSock := filepath.Join(dir, "app.sock"), filepath.Join(dir, "egress.sock")
	t.Cleanup(func() { // after the proxies stopped (cleanups run last first)
		if _, err := os.Lstat(egressSock); !os.IsNotExist(err) {
			t.Errorf("the egress socket is left after the stop: %v", err)
		}
	})
	seen := make(chan *http.Request, 4)
	appLn, err := net.Listen("unix", appSock)
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r
		io.WriteString(w, "done")
	})}
	go app.Serve(appLn)
	defer app.Close()
	in := startProxy(t, ingressYAML(witURL, ttsURL, "unix://"+appSock)+"  upstream_path: /app\n")
	out := startProxy(t, strings.Replace(egressYAML(witURL, ttsURL, in["ingress"]+"/invoke"), "  listen: 127.0.0.1:0\n  tts", "  listen: unix://"+egressSock+"\n  tts", 1))
	if out["egress"] != "unix://"+egressSock {
		t.Fatalf("egress URL %q", out["egress"])
	}
	fi, err := os.Lstat(egressSock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Fatalf("egress socket %v %v", fi, err)
	}
	var d net.Dialer
	agent := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", egressSock)
	}}}
	defer agent.CloseIdleConnections()
	dc := mustBookThrough(t, agent, "http://egress/t1/x")
	r := <-seen
	if r.URL.Path != "/app/invoke/x" || r.Header.Get(proxy.VerifiedSenderField) != "wimse://a.example/agent/a1" || r.Header.Get(proxy.VerifiedDialogField) != dc.DLG() {
		t.Fatalf("the application saw %s %v", r.URL.Path, r.Header)
	}
}
