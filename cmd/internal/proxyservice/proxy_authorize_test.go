package proxyservice

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// toolAllowList is the worked example of docs/proxy.md: tools/list for every workload
// of the trust domain, search for every one, book only for the travel agent and only
// in a dialog whose initiator was proved.
const toolAllowList = `  authorize:
    - name: list-tools
      allow: sender_trust_domain == "a.example" && operation == "tools/list"
    - name: search
      allow: operation == "tools/call" && name == "search"
    - name: travel-books
      allow: |
        sender == "wimse://a.example/agent/a1" && operation == "tools/call" &&
        name == "book" && initiator_proved && txn.scope.split(" ").exists(s, s == "trip.book")
`

// Issue 25, the ingress: -check-config type-checks the allow conditions, and names the
// file, the line and the field of one that does not compile.
func TestIssue25_ProxyCheckConfigAuthorize(t *testing.T) {
	expectCheckConfig(t, "allow list", checkedIngressYAML+toolAllowList, "")
	lineOf := func(yaml, text string) int { return strings.Count(yaml[:strings.Index(yaml, text)], "\n") + 1 }
	typo := checkedIngressYAML + "  authorize:\n    - name: t\n      allow: sendr == \"x\"\n"
	expectCheckConfig(t, "typo", typo, fmt.Sprintf("p.yaml:%d:14: ingress.authorize[0].allow", lineOf(typo, "sendr")))
	block := checkedIngressYAML + "  authorize:\n    - name: t\n      allow: |\n        name == \"a\" &&\n          nme == \"b\"\n"
	expectCheckConfig(t, "block", block, fmt.Sprintf("p.yaml:%d: ingress.authorize[0].allow", lineOf(block, "nme")))
	for _, c := range []struct{ name, yaml, want string }{
		{"not a condition", "  authorize:\n    - {name: t, allow: name}\n", "bool is needed"},
		{"no name", "  authorize:\n    - {allow: \"true\"}\n", "needs a name"},
		{"two names", "  authorize:\n    - {name: t, allow: \"true\"}\n    - {name: t, allow: \"false\"}\n", `two rules named "t"`},
		{"no allow", "  authorize:\n    - {name: t}\n", "needs an allow condition"},
		{"empty", "  authorize: []\n", "would refuse every request"},
		{"unknown member", "  authorize:\n    - {name: t, allow: \"true\", deny: \"false\"}\n", "deny"},
	} {
		expectCheckConfig(t, c.name, checkedIngressYAML+c.yaml, c.want)
	}
}

// toolServer is an MCP tool server stand-in that counts the calls of each tool.
type toolServer struct {
	mu    sync.Mutex
	calls map[string]int
}

func (s *toolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &req)
	s.mu.Lock()
	s.calls[req.Method+" "+req.Params.Name]++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, req.ID)
}

func (s *toolServer) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

// Issue 25, the ingress: with two dialogtrust proxy commands between an agent and a
// tool server, the tools of the allow list reach the server and a tool not on it never
// does: the agent gets a JSON-RPC error with not_authorized, the ingress logs which
// rule decided (none) and why, and the reason is not sent.
func TestIssue25_ProxyCommandsToolAllowList(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	tools := &toolServer{calls: map[string]int{}}
	app := httptest.NewServer(tools)
	defer app.Close()
	in, inLog := startProxyLogged(t, strings.Replace(ingressYAML(witURL, ttsURL, app.URL), "  sign_responses: true\n", "", 1)+toolAllowList+"log: {level: debug}\n")
	eg := strings.Replace(egressYAML(witURL, ttsURL, in["ingress"]+"/mcp"), " require_signed_response: true", "", 1)
	out := startProxy(t, eg)
	c := &http.Client{}
	dc := "" // the dialog the first call starts, which the others continue
	call := func(method, name string) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"name":%q}}`, method, name)
		if dc == "" {
			res, b := postStartDialog(t, c, out["egress"]+"/t1", body)
			dc = res.Header.Get(dialog.HeaderName)
			return res.StatusCode, string(b)
		}
		req, _ := http.NewRequest("POST", out["egress"]+"/t1", strings.NewReader(body))
		req.Header.Set(dialog.HeaderName, dc)
		res, b := testkit.Do(t, c, req)
		return res.StatusCode, string(b)
	}
	for _, tool := range []string{"search", "book"} {
		if status, b := call("tools/call", tool); status != 200 || !strings.Contains(b, `"result"`) {
			t.Fatalf("%s: %d %s", tool, status, b)
		}
	}
	if status, b := call("tools/list", ""); status != 200 || !strings.Contains(b, `"result"`) {
		t.Fatalf("tools/list: %d %s", status, b)
	}
	status, b := call("tools/call", "delete")
	if status != 200 || !strings.Contains(b, `"error"`) || !strings.Contains(b, `"not_authorized"`) || strings.Contains(b, "no rule allows") {
		t.Fatalf("delete: %d %s", status, b)
	}
	if tools.count("tools/call search") != 1 || tools.count("tools/call book") != 1 || tools.count("tools/list ") != 1 || tools.count("tools/call delete") != 0 {
		t.Fatalf("calls at the tool server: %v", tools.calls)
	}
	decided := map[string]string{}
	for _, l := range logLines(inLog, "authorization decision") {
		decided[fmt.Sprint(l["name"], l["allow"])] = fmt.Sprint(l["rule"], "|", l["reason"])
	}
	if decided["searchtrue"] != "search|" || decided["booktrue"] != "travel-books|" || decided["deletefalse"] != "|no rule allows the request" {
		t.Fatalf("logged decisions %v\n%s", decided, inLog)
	}
	refused := logLines(inLog, "refused")
	if len(refused) != 1 || refused[0]["code"] != "not_authorized" {
		t.Fatalf("the refusal was not logged with its code: %v", refused)
	}
}
