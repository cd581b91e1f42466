package interop

// The operator's page (issue 26) in chromium, with a real receiver hop: the real tts
// keeps its store, its revocations and its audit trail in a real Redis (a stream),
// and a real `dialogtrust proxy` ingress in front of a small application keeps its
// revocations in the same Redis and audits to the same stream, so the page, which
// reads the TTS's stream, shows the dialog's issuance and the ingress's hop side by
// side. The operator revokes the dialog from the page, and the agent's next signed
// request in it, with the Txn-Token it already holds, is refused at the ingress with
// dialog_revoked (within the configured bound) and never reaches the application; the
// page then shows that refusal marked. Needs DIALOGTRUST_TEST_REDIS and chromium
// (skips without them, fails under CI=true).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// ingressHopsPage is what the test reads of a dialog's picture: each arrow as its
// class, its two ends and its label.
const ingressHopsPage = `(() => ({
  state: (document.getElementById('state') || {}).textContent || '',
  edges: [...document.querySelectorAll('#picture g.edge')].map(g =>
    g.classList[1] + ' ' + g.dataset.from + ' ' + g.dataset.to + ' | ' + ((g.querySelector('text.label') || {}).textContent || '')),
  scripts: document.scripts.length,
  pwned: !!window.__pwned,
}))()`

type ingressHopsDOM struct {
	State   string   `json:"state"`
	Edges   []string `json:"edges"`
	Scripts int      `json:"scripts"`
	Pwned   bool     `json:"pwned"`
}

// TestIssue26_OperatorPageIngressHopsInChromium: the acceptance of issue 26's page with
// a receiver hop: the failing request is a request at a real ingress.
func TestIssue26_OperatorPageIngressHopsInChromium(t *testing.T) {
	chromium := chromiumBinary(t)
	redisAddr := testkit.RedisAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := proc.BuildBinaries(t, "github.com/dialogtrust/dialogtrust/cmd/tts", "github.com/dialogtrust/dialogtrust/cmd/wit-issuer",
		"github.com/dialogtrust/dialogtrust/cmd/dialogtrust")
	w := &pageTTS{dir: t.TempDir()}
	w.witURL = startDevWITIssuer(t, bin, w.dir, "a.example")

	// One Redis, one stream: the TTS's store prefix, the revocations' prefix (which
	// the TTS and every ingress share) and the audit stream both writers name, all
	// fresh for this run so that a shared CI Redis holds no other run's records.
	run := fmt.Sprintf("page26ingress:%d:", time.Now().UnixNano())
	stream, revocations := run+"audit", run+"revocations:"
	admin := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	w.base = "http://" + admin
	redisStore := fmt.Sprintf("store: {type: redis, redis: {addrs: [%q], prefix: %q}}", redisAddr, run+"tts:")
	ttsYAML := strings.Replace(devTTSConfig("a.example", w.witURL), "store: {type: memory}", redisStore, 1)
	if ttsYAML == devTTSConfig("a.example", w.witURL) {
		t.Fatal("the TTS configuration's store line moved: this test would run on memory")
	}
	cfg := proc.WriteFile(t, w.dir, "tts.yaml", ttsYAML+selfSignedPolicyYAML+fmt.Sprintf(`revocations:
  enabled: true
  bound: 2s
  prefix: %[2]q
  admin:
    listen: %[1]s
    administrators: ["wimse://a.example/ops/alice"]
    page: {enabled: true}
audit: {sink: redis, stream: %[3]q, writer: tts-1}
log: {level: info}
`, admin, revocations, stream))
	w.md = startTTS(t, bin, w.dir, "tts", cfg)

	// The application behind the ingress counts what reaches it.
	var reached atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"booked":true}`)
	}))
	t.Cleanup(app.Close)

	// Tool t1's ingress: the same Redis for its revocations, the same stream for its
	// records (checkpoints signed with its own key).
	const tool, toolAudience = "wimse://a.example/tool/t1", "https://t1.a.example/"
	auditKey, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := json.Marshal(auditKey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := proc.WriteFile(t, w.dir, "t1-audit.jwk", string(kb))
	ingress := (&jsDomain{bin: filepath.Join(bin, "dialogtrust"), dir: w.dir}).startProxy(t, "t1 ingress", fmt.Sprintf(`listen: 127.0.0.1:0
trust_domains: [a.example]
workload: {id: %[1]s, wit_issuer: %[2]s, auth: development}
wits: [{trust_domain: a.example, jwks_url: %[2]s/.well-known/jwks.json}]
jwks_retry: 1s
ingress:
  listen: 127.0.0.1:0
  upstream: %[3]s
  audiences: [%[4]q]
  txn_tokens: {jwks_url: %[5]s}
  require_txn_token: true
  require_dialog: true
  sign_responses: true
  store: {type: redis, redis: {addrs: [%[6]q], prefix: %[7]q}}
  revocations: {enabled: true, bound: 2s, prefix: %[8]q}
  audit: {sink: redis, stream: %[9]q, writer: t1-ingress, key_file: %[10]s}
`, tool, w.witURL, app.URL, toolAudience, w.md.JWKSURI, redisAddr, run+"t1:", revocations, stream, keyFile))["ingress"]

	// Agent a1: a Txn-Token in dialog dlg from the TTS (an "issued" record), then
	// signed requests through the ingress with that token (its records).
	const dlg = "trip-5e1d0c7b"
	const a1 = "wimse://a.example/agent/a1"
	a1WIT, a1Key := devWorkload(t, w.witURL, a1)
	ss, err := txntoken.NewSelfSignedToken(a1Key, identifier.MustParse(a1), "alice@a.example", w.md.Issuer, "trip.read", 5*time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := (&txntoken.Client{TokenEndpoint: w.md.TokenEndpoint, WIT: a1WIT, Key: a1Key}).Request(ctx, txntoken.Request{Audience: "a.example",
		Scope: "trip.read", SubjectToken: ss, SubjectTokenType: oauth.TokenTypeSelfSigned, Dialog: dlg})
	if err != nil {
		t.Fatal(err)
	}
	witKeys, err := keys.NewRemoteSet(ctx, w.witURL+"/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	a := &agent.Agent{Self: identifier.MustParse(a1), Client: &http.Client{Transport: &agent.Transport{
		Source:    &wit.Credential{WIT: a1WIT, Key: a1Key, Expiry: time.Now().Add(time.Hour)},
		Tokens:    agent.Forwarded(tok.AccessToken),
		Responses: httpsig.NewVerifier(wit.NewValidator(keys.NewTrust().AddTrustDomain("a.example", witKeys))),
		Audience:  func(*http.Request) string { return toolAudience },
	}}}
	book := func() *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ingress+"/book", strings.NewReader(`{"city":"Lisbon"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	res, dc, err := a.Start(ctx, book(), dlg)
	if err != nil {
		t.Fatalf("the first request through the ingress: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || reached.Load() != 1 {
		t.Fatalf("the first request through the ingress: %d %s (the application saw %d)", res.StatusCode, body, reached.Load())
	}
	// next sends the next request in the dialog and returns its refusal's code ("" for
	// an answer of the application).
	next := func() (errcode.Code, string) {
		t.Helper()
		res, err := a.Continue(ctx, book(), dc, nil)
		if err != nil {
			return errcode.CodeOf(err), err.Error()
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode == http.StatusOK {
			return "", string(body)
		}
		return errcode.CodeOf(problem.Read(res.StatusCode, body)), fmt.Sprintf("%d %s", res.StatusCode, body)
	}
	if c, got := next(); c != "" || reached.Load() != 2 {
		t.Fatalf("the second request in the dialog: %s %s", c, got)
	}

	// The browser: the operator's login link, the list, the dialog's picture.
	api := w.operator(t)
	login, err := api.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pb := openChromium(t, ctx, cancel, chromium, w.dir)
	browser := pb.ctx
	step := func() context.Context {
		c, stop := context.WithTimeout(browser, 30*time.Second)
		t.Cleanup(stop)
		return c
	}
	open := func(u, wait string) {
		t.Helper()
		if err := chromedp.Do(step(), chromedp.Navigate(u), chromedp.WaitVisible(wait)); err != nil {
			pb.mu.Lock()
			defer pb.mu.Unlock()
			t.Fatalf("chromium: %s: %v (script dialogs opened: %q)", u, err, pb.alerts)
		}
	}
	picture := func() ingressHopsDOM {
		t.Helper()
		d, err := chromedp.Run(browser, chromedp.Evaluate[ingressHopsDOM](ingressHopsPage))
		if err != nil {
			t.Fatalf("chromium: reading the picture: %v", err)
		}
		if d.Scripts != 0 || d.Pwned {
			t.Errorf("the dialog's page: %d scripts, pwned %v", d.Scripts, d.Pwned)
		}
		return d
	}
	if err := chromedp.Do(step(), signIn(login.LoginURL)...); err != nil {
		t.Fatalf("chromium: signing in: %v", err)
	}
	idx, err := chromedp.Run(browser, chromedp.Evaluate[pageDOM](readPage))
	if err != nil || !slices.Contains(idx.Dialogs, dlg) {
		t.Fatalf("the list: %+v, %v", idx, err)
	}

	// The picture: a1's token from the TTS (to its audience, the trust domain) and its
	// two requests accepted at t1's ingress, in the trail's order.
	open(w.base+"/admin/dialogs/"+dlg, "#picture")
	d := picture()
	want := []string{"issued " + a1 + " a.example", "accepted " + a1 + " " + tool, "accepted " + a1 + " " + tool}
	if got := arrows(d.Edges); strings.Join(got, "|") != strings.Join(want, "|") || d.State != "live" {
		t.Fatalf("the picture's hops: %q (state %q), want %q", d.Edges, d.State, want)
	}

	// Revoke from the page; the ingress refuses the next request in the dialog, with
	// the token a1 already holds, within the bound (the loop's deadline is a failure
	// deadline, well past the bound), and the application sees none of it.
	if err := chromedp.Do(step(), chromedp.SendKeys("#reason", "runaway agent"), chromedp.Click("#revoke-button"), chromedp.WaitVisible("#lift")); err != nil {
		code, _ := chromedp.Run(browser, chromedp.Evaluate[string](`(document.getElementById('error') || {dataset: {}}).dataset.code || ''`))
		t.Fatalf("chromium: revoking: %v (the page says %q)", err, code)
	}
	revokedAt := time.Now()
	deadline := revokedAt.Add(10 * time.Second)
	for {
		reachedBefore := reached.Load()
		c, got := next()
		if c == errcode.DialogRevoked {
			if n := reached.Load(); n != reachedBefore {
				t.Fatalf("the refused request reached the application (%d → %d)", reachedBefore, n)
			}
			break
		}
		if c != "" || time.Now().After(deadline) {
			t.Fatalf("a request in the dialog revoked from the page, %s after: %s %s", time.Since(revokedAt), c, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("refused at the ingress %s after the page's revocation (bound 2s)", time.Since(revokedAt).Round(time.Millisecond))
	reachedAtRefusal := reached.Load()
	if c, got := next(); c != errcode.DialogRevoked {
		t.Fatalf("the request after the refusal: %s %s", c, got)
	}
	if n := reached.Load(); n != reachedAtRefusal {
		t.Fatalf("the application saw %d requests after the dialog was refused at the ingress", n-reachedAtRefusal)
	}

	// The page again: the dialog revoked, and the ingress's refusals drawn as refused
	// arrows carrying dialog_revoked, after the accepted ones.
	open(w.base+"/admin/dialogs/"+dlg, "#picture")
	after := picture()
	got := arrows(after.Edges)
	if after.State != "revoked" || len(got) < len(want)+2 || strings.Join(got[:len(want)], "|") != strings.Join(want, "|") {
		t.Fatalf("after revoking: %q (state %q)", after.Edges, after.State)
	}
	for _, e := range after.Edges[len(want):] {
		if !strings.HasPrefix(e, "refused "+a1+" "+tool+" | ") || !strings.Contains(e, string(errcode.DialogRevoked)) {
			t.Errorf("a refusal at the ingress is drawn as %q", e)
		}
	}
	t.Logf("the dialog's picture after revoking: %q", after.Edges)
	pb.ranNothing(t, w.base, 4)
}

// arrows is the class and ends of each edge read by ingressHopsPage, without its label.
func arrows(edges []string) []string {
	out := make([]string, len(edges))
	for i, e := range edges {
		out[i], _, _ = strings.Cut(e, " | ")
	}
	return out
}
