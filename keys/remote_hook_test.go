package keys_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// WithRefreshHook reports every forced JWKS fetch, with its outcome (issue 7 item 7:
// the services count JWKS refreshes).
func TestRemoteSetRefreshHook(t *testing.T) {
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := keys.NewStaticSet(k.Public())
	body, _ := set.MarshalJSON()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	var (
		mu     sync.Mutex
		events []keys.RefreshEvent
	)
	clock := testkit.NewClock(testkit.Epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs, err := keys.NewRemoteSet(ctx, srv.URL, keys.WithClock(clock.Now), keys.WithRefreshHook(func(e keys.RefreshEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}))
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(events)
	}
	if count() != 1 || !events[0].Forced || events[0].Err != nil || events[0].URL != srv.URL {
		t.Fatalf("first fetch: %+v", events)
	}
	// A known kid fetches nothing; an unknown kid forces one fetch, rate limited.
	if _, err := rs.LookupKey(ctx, k.KID()); err != nil {
		t.Fatal(err)
	}
	if count() != 1 {
		t.Fatalf("a known kid caused a fetch: %+v", events)
	}
	clock.Advance(time.Minute)
	if _, err := rs.LookupKey(ctx, "unknown"); errcode.CodeOf(err) != errcode.UnknownKey {
		t.Fatalf("unknown kid: %v", err)
	}
	if _, err := rs.LookupKey(ctx, "unknown-2"); errcode.CodeOf(err) != errcode.UnknownKey {
		t.Fatalf("unknown kid: %v", err)
	}
	if count() != 2 || !events[1].Forced {
		t.Fatalf("unknown kids within the rate limit: %+v", events)
	}
}
