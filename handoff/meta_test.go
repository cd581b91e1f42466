package handoff

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// jsonNative fails unless v is made only of the types encoding/json decodes into any.
func jsonNative(t *testing.T, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil, string, float64, bool:
	case map[string]any:
		for _, e := range x {
			jsonNative(t, e)
		}
	case []any:
		for _, e := range x {
			jsonNative(t, e)
		}
	default:
		t.Fatalf("%T is not a JSON-native value", v)
	}
}

// Section 6 with SDK metadata maps: a Signed marshals as its text, a Handoff value and
// pointer marshal the same JSON form, and the metadata helpers give and read back
// values made only of JSON-native types.
func TestSec6_CarriageInSDKMetadata(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, _ := w.chain(user, planner, coder)
		h.Extra = map[string]any{"note": "x", "n": int64(7)}

		b, err := json.Marshal(h.Offer)
		if err != nil || string(b) != `"`+h.Offer.Text()+`"` {
			t.Fatalf("Signed marshals as %s (%v), want its text", b, err)
		}
		var back Signed
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(h.Offer) {
			t.Fatalf("Signed text round trip: %v", err)
		}
		if _, err := json.Marshal(Signed{}); err == nil {
			t.Fatal("an empty Signed was marshaled")
		}

		want, err := h.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		byValue, err := json.Marshal(*h)
		if err != nil || string(byValue) != string(want) {
			t.Fatalf("Handoff value marshals as %s, want %s", byValue, want)
		}
		byPointer, _ := json.Marshal(h)
		if string(byPointer) != string(want) {
			t.Fatalf("*Handoff marshals as %s, want %s", byPointer, want)
		}
		var hv Handoff
		if err := json.Unmarshal(want, &hv); err != nil || !hv.Offer.Equal(h.Offer) || len(hv.Chain) != 1 {
			t.Fatalf("Handoff JSON round trip: %v", err)
		}

		meta, err := PutHandoffMeta(map[string]any{"other": "kept"}, MCPMetaKey, h)
		if err != nil {
			t.Fatal(err)
		}
		jsonNative(t, meta)
		if meta["other"] != "kept" {
			t.Fatal("other metadata changed")
		}
		got, err := HandoffInMeta(meta, MCPMetaKey)
		if err != nil || !got.Offer.Equal(h.Offer) || !got.Chain[0].Equal(h.Chain[0]) || fmt.Sprint(got.Extra["n"]) != "7" {
			t.Fatalf("handoff from metadata: %+v %v", got, err)
		}
		// The same after the map went through JSON, as an SDK's wire does.
		wire, _ := json.Marshal(meta)
		var decoded map[string]any
		_ = json.Unmarshal(wire, &decoded)
		if got, err := HandoffInMeta(decoded, MCPMetaKey); err != nil || !got.Offer.Equal(h.Offer) {
			t.Fatalf("handoff from decoded metadata: %v", err)
		}
		if got, err := HandoffInMeta(map[string]any{MCPMetaKey: json.RawMessage(want)}, MCPMetaKey); err != nil || !got.Offer.Equal(h.Offer) {
			t.Fatalf("handoff from raw metadata: %v", err)
		}
		if got, err := HandoffInMeta(map[string]any{}, MCPMetaKey); got != nil || err != nil {
			t.Fatal("absent handoff")
		}
		if _, err := HandoffInMeta(map[string]any{MCPMetaKey: map[string]any{"chain": []any{}}}, MCPMetaKey); errcode.CodeOf(err) != errcode.InvalidEncoding {
			t.Fatalf("a handoff without an offer: %v", err)
		}

		r, _ := w.receiver(coder)
		d, err := receive(r, got)
		wantAccept(t, d, err)
		acc, _ := r.Accept(context.Background(), planner, d.Offer.Hop)
		sm, err := PutStatusMeta(nil, A2AExtensionURI, acc)
		if err != nil {
			t.Fatal(err)
		}
		jsonNative(t, sm)
		if s, err := StatusInMeta(sm, A2AExtensionURI); err != nil || !s.Equal(acc) {
			t.Fatalf("status from metadata: %v", err)
		}
		if s, err := SignedFromMeta(json.RawMessage(`"` + acc.Text() + `"`)); err != nil || !s.Equal(acc) {
			t.Fatalf("status from raw metadata: %v", err)
		}
		if _, err := SignedFromMeta(map[string]any{"not": "a status"}); errcode.CodeOf(err) != errcode.InvalidEncoding {
			t.Fatalf("a map read as a status: %v", err)
		}
	})
}

// A number in an unsigned extra member that a float64 cannot hold exactly is refused,
// not rounded, when the Handoff is made into JSON-native values.
func TestSec6_MetaValueRefusesInexactNumbers(t *testing.T) {
	w := newWorld(t, JWS)
	h, _ := w.chain(user, planner)
	h.Extra = map[string]any{"big": int64(1<<53 + 1)}
	if _, err := h.MetaValue(); errcode.CodeOf(err) != errcode.InvalidEncoding {
		t.Fatalf("2^53+1 became a float64: %v", err)
	}
	h.Extra = map[string]any{"ok": int64(1 << 53), "f": 1.5}
	m, err := h.MetaValue()
	if err != nil || m["ok"] != float64(1<<53) || m["f"] != 1.5 {
		t.Fatalf("%v %v", m, err)
	}
}

// Section 6: the status message of a Task without one is a valid A2A Message in the
// Task's version (messageId, role, parts), and a status message without them, or a
// Task in no known version, is refused rather than written invalid.
func TestSec6_A2ATaskStatusMessageIsValid(t *testing.T) {
	w := newWorld(t, JWS)
	h, _ := w.chain(user, planner, coder)
	r, _ := w.receiver(coder)
	d, err := receive(r, h)
	wantAccept(t, d, err)
	acc, _ := r.Accept(context.Background(), planner, d.Offer.Hop)
	for _, c := range []struct {
		task, role, kind string
	}{
		{`{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}`, "ROLE_AGENT", ""},
		{`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"}}`, "agent", "message"},
	} {
		out, err := PutA2ATaskStatus([]byte(c.task), acc)
		if err != nil {
			t.Fatalf("%s: %v", c.task, err)
		}
		var task struct {
			Status struct {
				Message struct {
					MessageID string           `json:"messageId"`
					Role      string           `json:"role"`
					Kind      string           `json:"kind"`
					TaskID    string           `json:"taskId"`
					ContextID string           `json:"contextId"`
					Parts     []map[string]any `json:"parts"`
				} `json:"message"`
			} `json:"status"`
		}
		if err := json.Unmarshal(out, &task); err != nil {
			t.Fatal(err)
		}
		m := task.Status.Message
		if m.MessageID == "" || m.Role != c.role || m.Kind != c.kind || len(m.Parts) != 1 || m.Parts[0]["text"] == nil || m.TaskID != "t1" || m.ContextID != "c1" {
			t.Fatalf("status message %+v of %s", m, out)
		}
		if s, err := A2ATaskStatus(out); err != nil || !s.Equal(acc) {
			t.Fatalf("status back: %v", err)
		}
		again, _ := PutA2ATaskStatus([]byte(c.task), acc)
		if string(again) != string(out) {
			t.Fatal("the same status gave another message")
		}
	}
	for _, bad := range []string{
		`{"id":"t1","status":{"state":"done"}}`,
		`{"id":"t1","status":{}}`,
		`{"id":"t1","status":{"state":"working","message":{"metadata":{}}}}`,
		`{"id":"t1","status":{"state":"working","message":{"messageId":"m","role":"agent"}}}`,
	} {
		if _, err := PutA2ATaskStatus([]byte(bad), acc); errcode.CodeOf(err) != errcode.InvalidEncoding {
			t.Errorf("%s: %v, want invalid_encoding", bad, err)
		}
	}
}

// Table 1 of section 4 in the A2A 0.3 spelling that a2a-go 0.3 uses.
func TestSec4_A2A03TaskStateMapping(t *testing.T) {
	want := map[State]string{
		StateOffered: "submitted", StateAccepted: "working", StateRejected: "rejected",
		StateCompleted: "completed", StateFailed: "failed", StateCanceled: "canceled",
	}
	checkTaskStates(t, want, A2A03TaskState, A2A03TaskInputRequired, A2A03TaskAuthRequired, "unknown", "COMPLETED", "Completed")
}
