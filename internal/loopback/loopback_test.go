package loopback_test

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/loopback"
)

// Plain HTTP goes only to this machine: localhost and loopback literals are, other
// names and addresses (a name that merely starts like one included) are not.
func TestIsHost(t *testing.T) {
	for h, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"localhost.evil.example": false, "10.0.0.1": false, "example.com": false, "": false, "::": false, "0.0.0.0": false,
	} {
		if got := loopback.IsHost(h); got != want {
			t.Errorf("IsHost(%q) = %v, want %v", h, got, want)
		}
	}
}
