package hostproto

import (
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/handoff"
)

func TestSec6_A2AExtensionsServiceParameter(t *testing.T) {
	h := http.Header{}
	h.Set(A2AExtensionsHeader, "https://example.com/ext/x")
	AddA2AExtension(h)
	AddA2AExtension(h)
	if got := h.Values(A2AExtensionsHeader); len(got) != 2 || got[1] != handoff.A2AExtensionURI {
		t.Fatalf("%q", got)
	}
}
