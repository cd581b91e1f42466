package testkit

import (
	"os"
	"strings"
	"testing"
)

// RedisAddr is the address of the real redis-server the Redis tests use, from
// DIALOGTRUST_TEST_REDIS. Without it the test is skipped, except under CI=true, where
// it fails: the Redis tests must run in CI (README, "Run the tests"; .ci/run starts one).
func RedisAddr(tb testing.TB) string {
	tb.Helper()
	addr := strings.TrimSpace(os.Getenv("DIALOGTRUST_TEST_REDIS"))
	if addr == "" {
		PeerMissing(tb, "DIALOGTRUST_TEST_REDIS is not set: a real redis-server is needed (.ci/run starts one)")
	}
	return addr
}
