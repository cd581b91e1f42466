package interop

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
)

// tsExamplesDir holds the TypeScript proxy examples: a tool on node:http and a client
// with fetch, no package (docs/proxy.md, "Quickstart").
var tsExamplesDir = testkit.ExamplesDir("..", "typescript")

// TestProxyTypeScriptExamples (issue 24 point 7): the TypeScript example client
// (examples/proxy/typescript/client.ts) calls the example tool (tool.ts) through an
// egress and an ingress, run as node runs them (node 22.18 and later strip the types;
// the node 22 that `npm ci` installs in conformance/), twice: with `dialogtrust dev
// --proxies --app` putting the tool behind dev's ingress, the egress at a fixed
// --egress-addr; and with two `dialogtrust proxy` programs of dev.local. Each time the
// tool sees the egress's workload as the verified sender, in the client's dialog, the
// Txn-Token of that dialog, no credential, and not the sender the client claimed; the
// egress refuses a path with no route. Without that node the test skips, and under
// CI=true fails.
func TestProxyTypeScriptExamples(t *testing.T) {
	node := node22(t)
	check := func(t *testing.T, egressURL, workload, scope string, tool *proc.Program) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		out := &testkit.SyncBuffer{}
		out.Write([]byte(tool.Output()))
		r := testkit.RunExampleClient(t, exec.CommandContext(ctx, node, filepath.Join(tsExamplesDir, "client.ts"), egressURL, "/t1", "--json"), out)
		dc, err := dialog.Parse(r.DialogContext)
		if err != nil {
			t.Fatalf("the client's Dialog-Context %q: %v", r.DialogContext, err)
		}
		testkit.CheckExampleRun(t, r, dc.DLG(), dc.Initiator().String(), workload, scope)
		if !tool.WaitOutput("from the verified sender "+workload+" (dialog "+dc.DLG()+")", 10*time.Second) {
			t.Errorf("the tool did not print the verified sender:\n%s", tool.Output())
		}
	}
	startTool := func(t *testing.T) (*proc.Program, string) {
		t.Helper()
		tool := proc.StartProcess(t, "tool.ts", node, "", []string{filepath.Join(tsExamplesDir, "tool.ts"), "127.0.0.1:0"}, nil)
		return tool, tool.WaitLine(t, "tool listening on ", time.Minute)
	}
	bin := filepath.Join(proc.BuildBinaries(t, "github.com/dialogtrust/dialogtrust/cmd/dialogtrust"), "dialogtrust")

	t.Run("dev --proxies --app", func(t *testing.T) {
		tool, appURL := startTool(t)
		egress := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
		home := t.TempDir()
		dev := proc.StartProcess(t, "dialogtrust dev", bin, t.TempDir(), []string{"dev", "--proxies", "--app", appURL, "--egress-addr", egress},
			[]string{"HOME=" + home, "XDG_CACHE_HOME=" + home})
		dev.WaitLine(t, "Ctrl-C stops ", time.Minute)
		check(t, "http://"+egress, "wimse://dev.local/agent/a1", "trip.read", tool)
	})

	t.Run("dialogtrust proxy", func(t *testing.T) {
		tool, appURL := startTool(t)
		d := startJSDomain(t)
		head := func(id string) string {
			return fmt.Sprintf("listen: 127.0.0.1:0\ntrust_domains: [dev.local]\nworkload: {id: %s, wit_issuer: %s, auth: development}\n"+
				"wits: [{trust_domain: dev.local, jwks_url: %s/.well-known/jwks.json}]\njwks_retry: 1s\n", id, d.witURL, d.witURL)
		}
		in := d.startProxy(t, "t1 ingress", head("wimse://dev.local/tool/t1")+fmt.Sprintf(`ingress:
  listen: 127.0.0.1:0
  upstream: %s
  audiences: ["https://t1.dev.local/"]
  txn_tokens: {jwks_url: %s/.well-known/jwks.json}
  require_txn_token: true
  sign_responses: true
`, appURL, d.ttsURL))
		out := d.startProxy(t, "a1 egress", head("wimse://dev.local/agent/a1")+fmt.Sprintf(`egress:
  listen: 127.0.0.1:0
  tts: {token_endpoint: %[1]s/token, issuer: %[1]s, self_signed_subject: alice@dev.local}
  routes:
    - {prefix: /t1, upstream: %[2]s, audience: dev.local, scope: trip.read, recipient: "https://t1.dev.local/", require_signed_response: true}
`, d.ttsURL, strings.TrimSuffix(in["ingress"], "/")))
		check(t, out["egress"], "wimse://dev.local/agent/a1", "trip.read", tool)
	})
}
