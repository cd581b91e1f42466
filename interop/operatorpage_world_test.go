package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// selfSignedPolicyYAML lets a.example's workloads exchange self-signed tokens and
// Txn-Tokens for Txn-Tokens with any details, five minutes long.
const selfSignedPolicyYAML = `subject_tokens:
  self_signed: {enabled: true}
policy:
  lifetime: 5m
  rules:
    - workload: "wimse://a.example/"
      subject_token_types: [self_signed, txn_token]
      details: ["*"]
`

// pageTTS is a real tts binary of a.example (with its development wit-issuer) keeping
// an audit trail in a file and serving the operator's page beside its revocations
// admin API, whose administrator is wimse://a.example/ops/alice.
type pageTTS struct {
	dir, witURL, base string
	md                *oauth.Metadata
}

func startPageTTS(t *testing.T) *pageTTS {
	t.Helper()
	bin := proc.BuildBinaries(t, "github.com/dialogtrust/dialogtrust/cmd/tts", "github.com/dialogtrust/dialogtrust/cmd/wit-issuer")
	p := &pageTTS{dir: t.TempDir()}
	p.witURL = startDevWITIssuer(t, bin, p.dir, "a.example")
	admin := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	p.base = "http://" + admin
	cfg := proc.WriteFile(t, p.dir, "tts.yaml", devTTSConfig("a.example", p.witURL)+selfSignedPolicyYAML+`revocations:
  enabled: true
  bound: 2s
  admin:
    listen: `+admin+`
    administrators: ["wimse://a.example/ops/alice"]
    page: {enabled: true}
audit:
  sink: file
  path: `+filepath.Join(p.dir, "audit.log")+`
log: {level: info}
`)
	p.md = startTTS(t, bin, p.dir, "tts", cfg)
	return p
}

// agent is workload id of a.example asking for Txn-Tokens through the token endpoint
// with self-signed subject tokens of user.
func (p *pageTTS) agent(t *testing.T, id, user string) func(ctx context.Context, dlg, audience, scope string) error {
	t.Helper()
	wit, key := devWorkload(t, p.witURL, id)
	return func(ctx context.Context, dlg, audience, scope string) error {
		ss, err := txntoken.NewSelfSignedToken(key, identifier.MustParse(id), user, p.md.Issuer, scope, 5*time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, err = (&txntoken.Client{TokenEndpoint: p.md.TokenEndpoint, WIT: wit, Key: key}).Request(ctx, txntoken.Request{Audience: audience,
			Scope: scope, SubjectToken: ss, SubjectTokenType: oauth.TokenTypeSelfSigned, Dialog: dlg})
		return err
	}
}

// operator is the administrator's admin API client, with its own WIT and signature.
func (p *pageTTS) operator(t *testing.T) *revokeapi.Client {
	t.Helper()
	wit, key := devWorkload(t, p.witURL, "wimse://a.example/ops/alice")
	return &revokeapi.Client{URL: p.base + revokeapi.Path, Signer: httpsig.NewSigner(key, wit)}
}

// pageBrowser is headless chromium with what the page did in it: the requests it
// made, the JavaScript dialogs it opened (cancel is called at the first: a script ran)
// and the console calls.
type pageBrowser struct {
	ctx                        context.Context
	mu                         sync.Mutex
	requests, alerts, consoled []string
}

func openChromium(t *testing.T, ctx context.Context, cancel context.CancelFunc, chromium, dir string) *pageBrowser {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1400, 1000))...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	b := &pageBrowser{ctx: browser}
	if err := chromedp.Listen(browser, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		case *page.EventJavascriptDialogOpening:
			b.alerts = append(b.alerts, e.Message)
			cancel() // a script ran: stop here (the dialog would block the page)
		case *runtime.EventConsoleAPICalled:
			b.consoled = append(b.consoled, string(e.Type))
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return b
}

// signIn is the operator's sign-in in chromium: open the login link (its page shows
// the Sign in button; opening it spends nothing), press the button, land on the list.
func signIn(link string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{chromedp.Navigate(link), chromedp.WaitVisible("#sign-in"), chromedp.Click("#sign-in"), chromedp.WaitVisible("#dialogs")}
}

// ranNothing: no JavaScript dialog opened, nothing was written to the console, and
// every request stayed under base's /admin/; at least min requests were seen, so
// that the listener saw enough for this to prove anything.
func (b *pageBrowser) ranNothing(t *testing.T, base string, min int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.alerts) != 0 || len(b.consoled) != 0 {
		t.Errorf("dialogs %q and console calls %q: something ran", b.alerts, b.consoled)
	}
	for _, u := range b.requests {
		if !strings.HasPrefix(u, base+"/admin/") {
			t.Errorf("the page made a request to %s", u)
		}
	}
	if len(b.requests) < min {
		t.Errorf("only %d requests seen: the network listener saw too little for the check above to prove anything", len(b.requests))
	}
}
