package redisstore

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// A Sentinel form without a master name or without sentinels refuses every claim and
// says why, without dialling anything.
func TestNewFailoverClientRefusesIncomplete(t *testing.T) {
	for _, tc := range []struct {
		s    Sentinel
		want string
	}{
		{Sentinel{Addrs: []string{"127.0.0.1:1"}}, "master name"},
		{Sentinel{MasterName: "m"}, "sentinel address"},
	} {
		c := NewFailoverClient(tc.s)
		err := NewReplay(c).Claim(context.Background(), "k", time.Minute)
		_ = c.Close()
		if errcode.CodeOf(err) != errcode.StoreUnavailable || errcode.KindOf(err) != errcode.Incomplete || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want could not complete store_unavailable naming %q", tc.s, err, tc.want)
		}
	}
}

// WithTLS and Sentinel.TLS never negotiate below TLS 1.2, and leave the caller's
// config as it was.
func TestTLSAtLeast12(t *testing.T) {
	old := &tls.Config{MinVersion: tls.VersionTLS10, ServerName: "redis.test"}
	var c connConfig
	WithTLS(old)(&c)
	if c.tls.MinVersion != tls.VersionTLS12 || c.tls.ServerName != "redis.test" || old.MinVersion != tls.VersionTLS10 {
		t.Fatalf("WithTLS: %+v (caller's %+v)", c.tls, old)
	}
	if v := minTLS12(&tls.Config{MinVersion: tls.VersionTLS13}).MinVersion; v != tls.VersionTLS13 {
		t.Fatalf("TLS 1.3 minimum lowered to %x", v)
	}
	if minTLS12(nil) != nil {
		t.Fatal("no TLS became TLS")
	}
}
