package proxyservice

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// Issue 25, the egress's report of a refused first request: the ingress's allow list
// refuses the first request of a dialog (a JSON-RPC error on 200 that echoes no
// Dialog-Context, since no dialog was established). The agent behind the egress gets
// the ingress's own not_authorized, as a JSON-RPC error naming its request, marked
// Dialogtrust-Refused-By: upstream, and no Dialog-Context; not the egress's
// dialog_context_mismatch. The tool never runs, and the egress logs the refusal as the
// upstream's. An allowed first request starts the dialog as before. The ingress signs
// its responses (sign_responses), its refusals after the proof verified among them
// (dialog-binding section 7), so the refusal is the ingress's signed one, also on a route
// with require_signed_response. Behind an ingress that does not sign, the refusal is
// marked unsigned, and on a route with require_signed_response it is not taken (the
// rule of docs/proxy.md, "Refusals": it cannot be told from an answer):
// missing_credential, the egress's own.
func TestIssue25_ProxyFirstRequestRefusalKeepsItsCode(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	tools := &toolServer{calls: map[string]int{}}
	app := httptest.NewServer(tools)
	defer app.Close()
	in := startProxy(t, ingressYAML(witURL, ttsURL, app.URL)+toolAllowList)
	unsigning := startProxy(t, strings.Replace(ingressYAML(witURL, ttsURL, app.URL), "  sign_responses: true\n", "", 1)+toolAllowList)
	upstream, unsigned := in["ingress"]+"/mcp", unsigning["ingress"]+"/mcp"
	eg := strings.Replace(egressYAML(witURL, ttsURL, upstream), " require_signed_response: true", "", 1) +
		fmt.Sprintf("    - {prefix: /signed, upstream: %s, audience: a.example, scope: trip.book, recipient: \"https://t1.a.example/\", require_signed_response: true}\n", upstream) +
		fmt.Sprintf("    - {prefix: /unsigned, upstream: %s, audience: a.example, scope: trip.book, recipient: \"https://t1.a.example/\"}\n", unsigned) +
		fmt.Sprintf("    - {prefix: /unsigned-required, upstream: %s, audience: a.example, scope: trip.book, recipient: \"https://t1.a.example/\", require_signed_response: true}\n", unsigned)
	out, egLog := startProxyLogged(t, eg)
	c := &http.Client{}
	call := func(route, name string) (*http.Response, []byte) {
		return postStartDialog(t, c, out["egress"]+route, fmt.Sprintf(`{"jsonrpc":"2.0","id":"q1","method":"tools/call","params":{"name":%q}}`, name))
	}
	refusedAs := func(route, verified string) {
		t.Helper()
		res, b := call(route, "delete")
		var e struct {
			ID    string `json:"id"`
			Error struct {
				Code int `json:"code"`
				Data struct{ Code, Kind, Detail string }
			} `json:"error"`
		}
		if res.StatusCode != 200 || json.Unmarshal(b, &e) != nil || e.ID != "q1" || e.Error.Code != -32602 ||
			e.Error.Data.Code != "not_authorized" || e.Error.Data.Kind != "failed" || !strings.Contains(e.Error.Data.Detail, verified) {
			t.Fatalf("the refused first request on %s: %d %s", route, res.StatusCode, b)
		}
		if res.Header.Get(proxy.RefusedByField) != "upstream" || res.Header.Get(dialog.HeaderName) != "" {
			t.Fatalf("the refusal's fields on %s: %v", route, res.Header)
		}
	}

	refusedAs("/t1", "signed by wimse://a.example/tool/t1")
	refused := logLines(egLog, "refused")
	if len(refused) != 1 || refused[0]["code"] != "not_authorized" || refused[0]["refused_by"] != "upstream" {
		t.Fatalf("the egress's log of the refusal: %v", refused)
	}
	refusedAs("/signed", "signed by wimse://a.example/tool/t1")
	refusedAs("/unsigned", "unsigned and so not verified")

	res, b := call("/t1", "search")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"result"`) || res.Header.Get(dialog.HeaderName) == "" {
		t.Fatalf("the allowed first request: %d %s %v", res.StatusCode, b, res.Header)
	}

	res, b = call("/unsigned-required", "delete")
	if res.StatusCode != 401 || !strings.Contains(string(b), `"code":"missing_credential"`) || res.Header.Get(proxy.RefusedByField) != "egress" {
		t.Fatalf("the unsigned refusal on a route requiring a signed response: %d %s", res.StatusCode, b)
	}
	if tools.count("tools/call delete") != 0 || tools.count("tools/call search") != 1 {
		t.Fatalf("calls at the tool server: %v", tools.calls)
	}
}
