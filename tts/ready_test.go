package tts

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// issue 12 point 4: the Redis client's PING reaches /readyz as a readiness check
// without a code of its own; a store that does not answer is store_unavailable, as in
// the WIT issuer, never keys_unavailable.
func TestReadyzStoreCheckIsStoreUnavailable(t *testing.T) {
	e := newEnv(t, func(_ *env, c *Config) {
		c.ReadyChecks = []ReadyCheck{func(context.Context) error {
			return errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
		}}
	})
	s, b := testkit.Get(t, e.url+PathReadyz)
	if s != 503 || !strings.Contains(string(b), `"code":"store_unavailable"`) || !strings.Contains(string(b), `"kind":"could_not_complete"`) {
		t.Fatalf("%d %s", s, b)
	}
}
