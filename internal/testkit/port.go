package testkit

import (
	"net"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for a server that
// must be told its port before it starts (a redis-server's flags, a peer whose issuer
// URL names it).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
