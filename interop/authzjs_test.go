package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
)

// Issue 25's acceptance with the official TypeScript MCP SDK on both ends: the
// planner's client calls tools on the hotel's tool server through two `dialogtrust
// proxy` processes, and the hotel's ingress has a tool allow-list (ingress.authorize,
// the example of docs/proxy.md). The tool on the list reaches the tool server; a tool
// not on it never does (the server counts the calls it ran), and the SDK's client gets
// a JSON-RPC error whose data carries not_authorized. An allow rule that cannot be
// evaluated refuses too, with decision_unavailable.

// plainRoute is an egress route that makes no handoff offer.
type plainRoute struct{ prefix, upstream string }

func (r plainRoute) routeYAML() string {
	return fmt.Sprintf("{prefix: %s, upstream: %s, audience: dev.local, scope: trip.book, recipient: %q}", r.prefix, r.upstream, jsHotelAudience)
}

// signedPlainRoute is a plainRoute with require_signed_response.
type signedPlainRoute struct{ plainRoute }

func (r signedPlainRoute) routeYAML() string {
	return strings.TrimSuffix(r.plainRoute.routeYAML(), "}") + ", require_signed_response: true}"
}

// toolAllowList is the hotel's allow list: the MCP session's own requests, and the
// book_hotel tool for the planner only.
const toolAllowList = `  authorize:
    - name: mcp-session
      allow: |
        method != "POST" ||
        (protocol == "mcp" && operation in ["initialize", "notifications/initialized", "tools/list"])
    - name: planner-books
      allow: sender == "wimse://dev.local/agent/planner" && operation == "tools/call" && name == "book_hotel"
`

// toolRuns is how many times the tool server ran tool (seenRequests).
func toolRuns(p *proc.Program, tool string) int {
	n := 0
	for _, seen := range seenRequests(p) {
		var s struct {
			Tool string `json:"tool"`
		}
		if json.Unmarshal([]byte(seen), &s) == nil && s.Tool == tool {
			n++
		}
	}
	return n
}

func TestIssue25_ProxyJSToolAllowList(t *testing.T) {
	node := jsSDKs(t)
	d := startJSDomain(t)
	mcpApp, mcpURL := startJSApp(t, node, "MCP tool server", "proxy-mcp-server.mjs")
	base := d.ingressYAML(strings.TrimSuffix(mcpURL, "/mcp"), "mcp")
	in := d.startProxy(t, "hotel MCP ingress", base+toolAllowList)
	// The session's requests pass; the tool call meets a rule that reads a claim the
	// Txn-Token does not have.
	broken := d.startProxy(t, "hotel MCP ingress, broken rule", base+strings.SplitAfter(toolAllowList, "tools/list\"])\n")[0]+
		"    - {name: needs-claim, allow: 'operation == \"tools/call\" && txn.no_such_claim == \"x\"'}\n")
	eg := d.startProxy(t, "planner egress", d.egressYAML(
		plainRoute{"/hotel", in["ingress"] + "/mcp"},
		plainRoute{"/hotel-broken", broken["ingress"] + "/mcp"},
	))
	noOffer := []string{"DIALOGTRUST_HANDOFF=0"}

	kind, out := runJS(t, node, append(noOffer, "DIALOGTRUST_TOOL=book_hotel"), "proxy-mcp-client.mjs", eg["egress"]+"/hotel", `{"city":"Lisbon"}`)
	if kind != "result" || toolRuns(mcpApp, "book_hotel") != 1 {
		t.Fatalf("the allowed tool: %s %s; runs %d", kind, out, toolRuns(mcpApp, "book_hotel"))
	}

	var e struct {
		Code int `json:"code"`
		Data struct {
			Code string `json:"code"`
			Kind string `json:"kind"`
		} `json:"data"`
		Message string `json:"message"`
	}
	kind, out = runJS(t, node, append(noOffer, "DIALOGTRUST_TOOL=cancel_booking"), "proxy-mcp-client.mjs", eg["egress"]+"/hotel", `{"city":"Lisbon"}`)
	if err := json.Unmarshal(out, &e); err != nil || kind != "error" || e.Code != -32602 || e.Data.Code != "not_authorized" || e.Data.Kind != "failed" {
		t.Fatalf("the tool not on the list: %s %s", kind, out)
	}
	if strings.Contains(string(out), "no rule allows") {
		t.Errorf("the decision's reason reached the client: %s", out)
	}

	kind, out = runJS(t, node, append(noOffer, "DIALOGTRUST_TOOL=book_hotel"), "proxy-mcp-client.mjs", eg["egress"]+"/hotel-broken", `{"city":"Lisbon"}`)
	if err := json.Unmarshal(out, &e); err != nil || kind != "error" || e.Code != -32603 || e.Data.Code != "decision_unavailable" || e.Data.Kind != "could_not_complete" {
		t.Fatalf("a rule that cannot be evaluated: %s %s", kind, out)
	}
	if n := toolRuns(mcpApp, "cancel_booking"); n != 0 {
		t.Fatalf("the tool not on the list ran %d times", n)
	}
	if n := toolRuns(mcpApp, "book_hotel"); n != 1 {
		t.Fatalf("book_hotel ran %d times, want once (only the allowed call)", n)
	}
}
