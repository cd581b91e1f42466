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
		if os.Getenv("CI") == "true" {
			tb.Fatal("DIALOGTRUST_TEST_REDIS is not set and CI=true: the Redis tests must run in CI (use .ci/run)")
		}
		tb.Skip("DIALOGTRUST_TEST_REDIS is not set; skipping the test against a real redis-server")
	}
	return addr
}
