package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo runs the demo end to end, as `dialogtrust demo` does; CI runs it.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), " passed, 0 failed") || strings.Contains(out.String(), "FAIL") {
		t.Fatal("a check failed")
	}
}
