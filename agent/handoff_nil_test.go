package agent_test

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
)

// A message said to carry a handoff but given none is refused with a stable code, not a
// panic.
func TestA2AMessageSendWithoutHandoffRefused(t *testing.T) {
	if _, err := agent.A2AMessageSend(1, []byte(`{"role":"user","parts":[]}`), nil); errcode.CodeOf(err) != errcode.InvalidRequest {
		t.Fatalf("got %v", err)
	}
}
