package tts

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// One logical TTS, two instances sharing a Redis replay store (oauth.md 1.2: a trust
// domain has one logical TTS that may run as many instances): a WPT accepted by one
// instance is a replay at the other. Needs a real redis-server (DIALOGTRUST_TEST_REDIS);
// in CI (CI=true) its absence is a failure, not a skip.
func TestTT1_9_ReplayedWPTAcrossInstancesRedis(t *testing.T) {
	addr := testkit.RedisAddr(t)
	client := redisstore.NewClient([]string{addr}, false)
	defer client.Close()
	prefix := "dialogtrust-test:tts:" + rand.Text() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := client.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			client.Del(ctx, keys...)
		}
	})
	shared := redisstore.NewReplay(client, redisstore.WithPrefix(prefix))
	e := newEnv(t, func(e *env, c *Config) {
		c.Replay = shared
		c.Authenticators = oauth.WIMSEAuthenticators(e.wits, shared, c.Issuer+PathToken)
	})
	// The second instance: same issuer, keys, policy and store.
	cfg := e.srv.cfg
	cfg.Registry, cfg.Logger = nil, slog.New(slog.DiscardHandler)
	second, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := e.workload("/agent/a1")
	form := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken).Encode()
	req := httptest.NewRequest(http.MethodPost, e.url+PathToken, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := wpt.SignRequest(req, w.Key, w.WIT, e.url+PathToken, wpt.RequestOptions{}, wpt.WithClock(e.clock.Now)); err != nil {
		t.Fatal(err)
	}
	h := req.Header.Clone()
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("first instance: %d %s", rec.Code, rec.Body)
	}
	again := httptest.NewRequest(http.MethodPost, e.url+PathToken, strings.NewReader(form))
	again.Header = h
	rec = httptest.NewRecorder()
	second.Handler().ServeHTTP(rec, again)
	wantOAuth(t, rec.Code, rec.Body.Bytes(), http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.Replayed)
}
