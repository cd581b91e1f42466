package handoff

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// Section 6, A2A: the Handoff goes in Message.metadata under the extension URI, and the
// URI is listed in Message.extensions; statuses go in the reply Message, the Task's
// status message, and the CancelTask params.
func TestSec6_A2ACarriage(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		h, _ := w.chain(user, planner, coder)
		msg := []byte(`{"role":"ROLE_USER","messageId":"m-1","contextId":"ctx-7c1e","parts":[{"text":"<b>please</b>"}],` +
			`"metadata":{"other":1},"extensions":["https://example.com/ext/x"]}`)
		out, err := PutA2AMessage(msg, h)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		exts := m["extensions"].([]any)
		if !slices.Contains(exts, any(A2AExtensionURI)) || !slices.Contains(exts, any("https://example.com/ext/x")) {
			t.Fatalf("extensions %v", exts)
		}
		md := m["metadata"].(map[string]any)
		if md["other"] != float64(1) || md[A2AExtensionURI] == nil || m["contextId"] != "ctx-7c1e" {
			t.Fatalf("metadata %v", md)
		}
		if parts := m["parts"].([]any); parts[0].(map[string]any)["text"] != "<b>please</b>" {
			t.Fatal("other members changed")
		}
		back, err := A2AMessageHandoff(out)
		if err != nil || !back.Offer.Equal(h.Offer) || len(back.Chain) != 1 || !back.Chain[0].Equal(h.Chain[0]) {
			t.Fatalf("round trip: %v", err)
		}
		// Putting it twice lists the URI once.
		out2, _ := PutA2AMessage(out, h)
		_ = json.Unmarshal(out2, &m)
		if n := len(m["extensions"].([]any)); n != 2 {
			t.Fatalf("%d extensions", n)
		}
		// Received and checked straight from the message, with contextId as dialog.
		r, _ := w.receiver(coder)
		d, err := r.Receive(ctx, Inbound{Handoff: back, Dialog: "ctx-7c1e"})
		wantAccept(t, d, err)
		// Not listed in extensions: refused rather than ignored.
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(out, &raw)
		delete(raw, "extensions")
		unlisted, _ := json.Marshal(raw)
		if _, err := A2AMessageHandoff(unlisted); err == nil {
			t.Fatal("handoff without the extension listed was taken")
		}
		// Absent.
		if h, err := A2AMessageHandoff(msg); h != nil || err != nil {
			t.Fatal("absent handoff")
		}

		acc, _ := r.Accept(ctx, planner, d.Offer.Hop)
		reply, err := PutA2AStatus([]byte(`{"role":"ROLE_AGENT","messageId":"m-2","parts":[]}`), acc)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := A2AMessageStatus(reply); err != nil || !s.Equal(acc) {
			t.Fatalf("reply status: %v", err)
		}
		task, err := PutA2ATaskStatus([]byte(`{"id":"task-42","contextId":"ctx-7c1e","status":{"state":"TASK_STATE_WORKING"}}`), acc)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := A2ATaskStatus(task); err != nil || !s.Equal(acc) {
			t.Fatalf("task status: %v", err)
		}
		_ = json.Unmarshal(task, &m)
		if m["status"].(map[string]any)["state"] != "TASK_STATE_WORKING" {
			t.Fatal("task state lost")
		}
		dl := w.delegator(planner)
		h2, _ := dl.Offer(ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
		cancel, _ := dl.Cancel(ctx, mustHop(t, w, h2))
		params, err := PutA2ACancel([]byte(`{"id":"task-42"}`), cancel)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := A2ACancelStatus(params); err != nil || !s.Equal(cancel) {
			t.Fatalf("cancel: %v", err)
		}
	})
}

// Section 6, MCP: the Handoff goes under "quantumlearningmachines.com/agent-handoff" in
// params._meta; statuses in the CallToolResult's _meta and in notifications/cancelled.
func TestSec6_MCPCarriage(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		h := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
		params := []byte(`{"name":"run_tests","arguments":{"suite":"unit"},"_meta":{"progressToken":7}}`)
		out, err := PutMCPRequest(params, h)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(out, &m)
		meta := m["_meta"].(map[string]any)
		if meta["progressToken"] != float64(7) || meta[MCPMetaKey] == nil || m["name"] != "run_tests" {
			t.Fatalf("%s", out)
		}
		back, err := MCPRequestHandoff(out)
		if err != nil || !back.Offer.Equal(h.Offer) {
			t.Fatal(err)
		}
		// Params without _meta at all.
		out, err = PutMCPRequest([]byte(`{"name":"x"}`), h)
		if err != nil {
			t.Fatal(err)
		}
		if back, _ := MCPRequestHandoff(out); back == nil {
			t.Fatal("lost")
		}
		st := w.signStatus(&Status{Hop: NewHopID(), Offer: h.Offer.Digest(), Iss: coder, Aud: planner, Iat: 1, State: StateCompleted})
		res, err := PutMCPResult([]byte(`{"content":[{"type":"text","text":"ok"}],"isError":false}`), st)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := MCPResultStatus(res); err != nil || !s.Equal(st) {
			t.Fatal(err)
		}
		n, err := PutMCPCancel([]byte(`{"requestId":3,"reason":"user"}`), st)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := MCPCancelStatus(n); err != nil || !s.Equal(st) {
			t.Fatal(err)
		}
		if s, err := MCPResultStatus([]byte(`{"content":[]}`)); s != nil || err != nil {
			t.Fatal("absent status")
		}
		for _, bad := range []string{`[]`, `{"_meta":[]}`, `{"_meta":{"` + MCPMetaKey + `":5}}`} {
			if _, err := MCPRequestHandoff([]byte(bad)); err == nil {
				t.Errorf("%s accepted", bad)
			}
		}
		_ = ctx
	})
}
