package kit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

const testSecret = "0123456789abcdef0123456789abcdef"

func writeSecret(t *testing.T, secret string) string {
	t.Helper()
	return testkit.WriteTemp(t, "secret", secret+"\n")
}

func TestCheckSharedRefuses(t *testing.T) {
	redis := StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"127.0.0.1:1"}}}
	file := &SharedKeysConfig{SecretFile: "/s"}
	for _, c := range []struct {
		name string
		kc   KeysConfig
		sc   StoreConfig
		want string
	}{
		{"memory store", KeysConfig{Shared: file}, StoreConfig{Type: "memory"}, "store.type redis"},
		{"with data_dir", KeysConfig{Shared: file, DataDir: "/d"}, redis, "excludes"},
		{"with signing_key_file", KeysConfig{Shared: file, SigningKeyFile: "/k"}, redis, "excludes"},
		{"no secret", KeysConfig{Shared: &SharedKeysConfig{}}, redis, "exactly one"},
		{"two secrets", KeysConfig{Shared: &SharedKeysConfig{SecretFile: "/s", SecretEnv: "S"}}, redis, "exactly one"},
		{"short publish delay", KeysConfig{Shared: file, PublishDelay: 5 * time.Minute}, redis, "publish_delay"},
		{"publish delay within a shorter JWKS cache time", KeysConfig{Shared: file, PublishDelay: 3 * time.Second, JWKSMaxAge: 2 * time.Second}, redis, "publish_delay"},
		{"negative jwks_max_age", KeysConfig{Shared: file, JWKSMaxAge: -time.Second}, redis, "jwks_max_age"},
		{"negative jwks_max_age without keys.shared", KeysConfig{JWKSMaxAge: -time.Second}, StoreConfig{Type: "memory"}, "jwks_max_age"},
	} {
		err := c.kc.CheckShared(c.sc, RotationStepInterval)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if err := (KeysConfig{Shared: file}).CheckShared(redis, RotationStepInterval); err != nil {
		t.Errorf("a valid section is refused: %v", err)
	}
	// A shorter JWKS cache time allows a shorter publish delay: still more than the step
	// plus the cache time.
	short := KeysConfig{Shared: file, PublishDelay: 3 * time.Second, JWKSMaxAge: time.Second}
	if err := short.CheckShared(redis, 2*time.Second); err == nil {
		t.Errorf("publish_delay 3s with step 2s and jwks_max_age 1s: accepted")
	}
	if err := short.CheckShared(redis, 100*time.Millisecond); err != nil {
		t.Errorf("publish_delay 3s with step 100ms and jwks_max_age 1s: %v", err)
	}
	if err := (KeysConfig{}).CheckShared(StoreConfig{Type: "memory"}, RotationStepInterval); err != nil {
		t.Errorf("no shared section: %v", err)
	}
}

func TestOpenSharedKeysRefusesShortSecret(t *testing.T) {
	sc := StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"127.0.0.1:1"}}}
	kc := KeysConfig{Shared: &SharedKeysConfig{SecretFile: writeSecret(t, testSecret[:31])}}
	st, err := OpenStore(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, _, err = OpenSharedKeys(context.Background(), kc, st, "tts", RotationStepInterval, time.Hour, nil)
	if err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("31-byte secret: %v", err)
	}
	t.Setenv("DIALOGTRUST_TEST_KEYRING_SECRET", "")
	kc = KeysConfig{Shared: &SharedKeysConfig{SecretEnv: "DIALOGTRUST_TEST_KEYRING_SECRET"}}
	if _, _, err := OpenSharedKeys(context.Background(), kc, st, "tts", RotationStepInterval, time.Hour, nil); err == nil || !strings.Contains(err.Error(), "not set") {
		t.Fatalf("unset secret_env: %v", err)
	}
}

// Two replicas configured alike sign with one key; one with another secret does not
// start.
func TestOpenSharedKeysRedis(t *testing.T) {
	addr := testkit.RedisAddr(t)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	sc := StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{addr}, Prefix: "dialogtrust-test:" + hex.EncodeToString(b) + ":"}}
	kc := KeysConfig{Shared: &SharedKeysConfig{SecretFile: writeSecret(t, testSecret)}}
	ctx := context.Background()
	st, err := OpenStore(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t.Cleanup(func() {
		c := redisstore.NewClient([]string{addr}, false)
		defer c.Close()
		_ = c.Del(context.Background(), sc.Redis.Prefix+"keyring:tts").Err()
	})
	r1, from, err := OpenSharedKeys(ctx, kc, st, "tts", RotationStepInterval, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, _, err := OpenSharedKeys(ctx, kc, st, "tts", RotationStepInterval, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if from != "shared in redis" || r1.Ring().Active().KID() != r2.Ring().Active().KID() {
		t.Fatalf("replicas sign with %s and %s (%s)", r1.Ring().Active().KID(), r2.Ring().Active().KID(), from)
	}
	t.Setenv("DIALOGTRUST_TEST_KEYRING_SECRET", strings.Repeat("y", 32))
	other := KeysConfig{Shared: &SharedKeysConfig{SecretEnv: "DIALOGTRUST_TEST_KEYRING_SECRET"}}
	if _, _, err := OpenSharedKeys(ctx, other, st, "tts", RotationStepInterval, time.Hour, nil); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("another secret: %v", err)
	}
}

// A replica that has not read the shared ring for the publish delay less the JWKS
// cache time is not ready; its next successful step makes it ready again.
func TestSharedKeysReady(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	rot, err := keys.NewSharedRotator(context.Background(), &keys.MemoryRingBackend{},
		keys.RotationConfig{PublishDelay: 10 * time.Minute, Retain: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ready := SharedKeysReady(rot, clock.Now)
	if err := ready(context.Background()); err != nil {
		t.Fatalf("just started: %v", err)
	}
	clock.Advance(5 * time.Minute)
	if err := ready(context.Background()); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	clock.Advance(time.Second)
	if err := ready(context.Background()); err == nil {
		t.Fatal("ready after not reading the ring for longer than publish_delay - 5m")
	}
	if err := rot.Step(); err != nil {
		t.Fatal(err)
	}
	if err := ready(context.Background()); err != nil {
		t.Fatalf("after a step: %v", err)
	}
	// With a JWKS cached for one minute, the limit is nine minutes.
	rot.Ring().SetMaxAge(time.Minute)
	clock.Advance(9 * time.Minute)
	if err := ready(context.Background()); err != nil {
		t.Fatalf("jwks_max_age 1m, at the limit: %v", err)
	}
	clock.Advance(time.Second)
	if err := ready(context.Background()); err == nil {
		t.Fatal("jwks_max_age 1m: ready after not reading the ring for longer than publish_delay - 1m")
	}
	static, err := keys.NewStaticRotator(rot.Ring().Active(), keys.RotationConfig{Retain: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := SharedKeysReady(static, clock.Now)(context.Background()); err != nil {
		t.Fatalf("a rotator that is not shared: %v", err)
	}
}
