package testkit

import (
	"os"
	"os/exec"
	"testing"
)

// PeerMissing ends a test whose real peer (a server, a binary, an SDK) is not there:
// the test is skipped, except under CI=true, where it fails, so that a test CI must run
// cannot silently stop running there. The message says what is missing and how to get
// it.
func PeerMissing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf(format+" (CI=true: this test must run in CI)", args...)
	}
	tb.Skipf(format, args...)
}

// RedisServer is the path of the redis-server binary, for a test that starts its own
// (TLS, a sentinel, a server it stops); without one, PeerMissing.
func RedisServer(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		PeerMissing(tb, "redis-server not found: %v", err)
	}
	return bin
}
