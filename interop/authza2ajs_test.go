package interop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/proxy"
)

// Issue 25's acceptance with the A2A JavaScript SDK on both ends: the planner's client
// sends one SendMessage through two `dialogtrust proxy` processes, starting a dialog
// with it, to the hotel's A2A server, whose ingress has a skill and method allow-list.
// The message asking for the allowed skill reaches the agent's executor; one asking
// for another skill, and the allowed skill by a method not on the list
// (SendStreamingMessage), never do (the server reports each message it executed), and
// the SDK's client gets a JSON-RPC error carrying the ingress's not_authorized, marked
// Dialogtrust-Refused-By: upstream: the refused message is the dialog's first request,
// which the egress reports with the receiver's code (not dialog_context_mismatch). The
// ingress signs its refusals (sign_responses), so the code is the ingress's, verified,
// also through a route that requires a signed response.

// skillAllowList is the hotel's allow list: the book_hotel skill by SendMessage, for
// the planner only.
const skillAllowList = `  authorize:
    - name: planner-books
      allow: |
        sender == "wimse://dev.local/agent/planner" && protocol == "a2a" &&
        operation == "SendMessage" && name == "book_hotel"
`

func TestIssue25_ProxyJSA2ASkillAllowList(t *testing.T) {
	node := jsSDKs(t)
	d := startJSDomain(t)
	a2aApp, a2aURL := startJSApp(t, node, "A2A server", "proxy-a2a-server.mjs")
	in := d.startProxy(t, "hotel A2A ingress", d.ingressYAML(strings.TrimSuffix(a2aURL, "/a2a"), "a2a10")+skillAllowList)
	eg := d.startProxy(t, "planner egress", d.egressYAML(plainRoute{"/hotel", in["ingress"] + "/a2a"},
		signedPlainRoute{plainRoute{"/hotel-signed", in["ingress"] + "/a2a"}}))
	noOffer := "DIALOGTRUST_HANDOFF=0"

	for i, route := range []string{"/hotel", "/hotel-signed"} {
		kind, out := runJS(t, node, []string{noOffer, "DIALOGTRUST_SKILL=book_hotel"}, "proxy-a2a-client.mjs", eg["egress"]+route)
		if kind != "result" || countSeen(a2aApp) != i+1 {
			t.Fatalf("the allowed skill on %s: %s %s; executed %d", route, kind, out, countSeen(a2aApp))
		}
	}

	// The ingress signs its responses (sign_responses), and so its refusals once the
	// request's signature verified (dialog-binding section 7): on the route that
	// requires a signed response too, the client reads the ingress's code, verified.
	refusals := []struct {
		name, route string
		env         []string
	}{
		{"another skill", "/hotel", []string{noOffer, "DIALOGTRUST_SKILL=cancel_booking"}},
		{"no skill", "/hotel", []string{noOffer}},
		{"a method not on the list", "/hotel", []string{noOffer, "DIALOGTRUST_SKILL=book_hotel", "DIALOGTRUST_A2A_STREAM=1"}},
		{"another skill, on a route requiring a signed response", "/hotel-signed", []string{noOffer, "DIALOGTRUST_SKILL=cancel_booking"}},
	}
	for _, c := range refusals {
		kind, out := runJS(t, node, c.env, "proxy-a2a-client.mjs", eg["egress"]+c.route)
		var e struct {
			Message string                      `json:"message"`
			Code    int                         `json:"code"`
			Data    struct{ Code, Kind string } `json:"data"`
			Fields  map[string]string           `json:"fields"`
		}
		if err := json.Unmarshal(out, &e); err != nil || kind != "error" || e.Data.Code != "not_authorized" || e.Data.Kind != "failed" || !strings.HasPrefix(e.Message, "not_authorized: ") {
			t.Errorf("%s: %s %s", c.name, kind, out)
			continue
		}
		if got := field(e.Fields, proxy.RefusedByField); got != "upstream" {
			t.Errorf("%s: %s %q, want upstream (%s)", c.name, proxy.RefusedByField, got, out)
		}
		if !strings.Contains(string(out), "signed by ") {
			t.Errorf("%s: the refusal is not the ingress's signed one: %s", c.name, out)
		}
		if strings.Contains(string(out), "dialog_context_mismatch") || strings.Contains(string(out), "no rule allows") {
			t.Errorf("%s: %s", c.name, out)
		}
	}
	if n := countSeen(a2aApp); n != 2 {
		t.Fatalf("the executor ran %d times, want twice (only the allowed skill, on each route)", n)
	}
}
