package kit

import (
	"context"
	"net"
	"time"
)

// IsLoopback reports whether addr (host:port) is on a loopback IP literal, or its host
// is one of names. A name is resolved at listen time, and what it resolves to is not
// the caller's to vouch for: only a binary that has always accepted "localhost" names
// it.
func IsLoopback(addr string, names ...string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	for _, n := range names {
		if host == n {
			return true
		}
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Ticker delivers ticks every d until ctx ends.
func Ticker(ctx context.Context, d time.Duration) <-chan time.Time {
	t := time.NewTicker(d)
	go func() {
		<-ctx.Done()
		t.Stop()
	}()
	return t.C
}
