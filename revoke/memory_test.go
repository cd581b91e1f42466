package revoke_test

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revoketest"
)

func TestMemoryContract(t *testing.T) {
	revoketest.RunStore(t, func(t *testing.T) revoketest.Env {
		c := newClock()
		return revoketest.Env{Store: revoke.NewMemory(revoke.WithClock(c.Now)), Now: c.Now, Advance: c.Advance}
	})
}
