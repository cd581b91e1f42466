package redisstore

import (
	"context"
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
