package keys_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// A JWKS URL that does not answer yet: keys_unavailable (could not
// be completed) until it does, retried at most once per interval, then used.
func TestLazyRemoteSet(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(k.Public())
	var up atomic.Bool
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if !up.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		b, _ := set.MarshalJSON()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := keys.NewLazyRemoteSet(t.Context(), srv.URL, 5*time.Second, clock)
	for i := 0; i < 5; i++ {
		_, err := l.LookupKey(context.Background(), k.KID())
		if errcode.CodeOf(err) != errcode.KeysUnavailable || errcode.KindOf(err) != errcode.Incomplete {
			t.Fatalf("got %v", err)
		}
	}
	if n := fetches.Load(); n > 2 {
		t.Fatalf("%d fetches within the retry interval", n)
	}
	up.Store(true)
	mu.Lock()
	now = now.Add(6 * time.Second)
	mu.Unlock()
	if _, err := l.LookupKey(context.Background(), k.KID()); err != nil {
		t.Fatal(err)
	}
	if err := l.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
}
