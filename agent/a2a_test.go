package agent

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
)

// Section 6: "A client also lists the URI in the A2A-Extensions service parameter".
// The A2A request names the extension under the header of its version (both names for
// an A2A 0.3 server, which reads X-A2A-Extensions) and uses that version's method, and
// the dialog middleware reads the handoff back from it.
func TestHandoffSec6_A2ARequestListsTheExtension(t *testing.T) {
	h := &handoff.Handoff{Offer: handoff.Signed{Form: handoff.JWS, Octets: []byte("eyJhbGciOiJFUzI1NiJ9.eyJ2IjoxfQ.c2ln")}}
	for _, c := range []struct {
		host        hostproto.Host
		method      string
		headers     []string
		notHeaders  []string
		messageJSON string
	}{
		{hostproto.A2A03, "message/send", []string{hostproto.A2AExtensionsHeader, hostproto.A2A03ExtensionsHeader}, nil, `{"kind":"message","role":"user","parts":[],"messageId":"m1"}`},
		{hostproto.A2A10, "SendMessage", []string{hostproto.A2AExtensionsHeader}, []string{hostproto.A2A03ExtensionsHeader}, `{"role":"ROLE_USER","parts":[{"text":"x"}],"messageId":"m1"}`},
	} {
		req, err := NewA2ARequest(context.Background(), c.host, "http://b.example/a2a", 1, json.RawMessage(c.messageJSON), h)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range c.headers {
			if got := req.Header.Values(name); len(got) != 1 || got[0] != handoff.A2AExtensionURI {
				t.Errorf("%s: %s is %q", c.host, name, got)
			}
		}
		for _, name := range c.notHeaders {
			if got := req.Header.Values(name); len(got) != 0 {
				t.Errorf("%s: %s is %q", c.host, name, got)
			}
		}
		if got, want := req.Header.Values(hostproto.A2AVersionHeader), map[hostproto.Host][]string{hostproto.A2A10: {"1.0"}}[c.host]; !slices.Equal(got, want) {
			t.Errorf("%s: %s is %q, want %q", c.host, hostproto.A2AVersionHeader, got, want)
		}
		body, _ := io.ReadAll(req.Body)
		var env struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &env)
		if env.Method != c.method {
			t.Errorf("%s: method %q", c.host, env.Method)
		}
		got, err := dialog.HandoffsIn(c.host)(body)
		if err != nil || got == nil || !got.Offer.Equal(h.Offer) {
			t.Errorf("%s: handoff back: %v", c.host, err)
		}
	}
	if _, err := NewA2ARequest(context.Background(), hostproto.MCP, "http://b.example/a2a", 1, json.RawMessage(`{}`), h); err == nil {
		t.Fatal("an A2A request for MCP")
	}
}
