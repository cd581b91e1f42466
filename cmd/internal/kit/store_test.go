package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// A data loss is one error line, then at most one a minute while more tags report it.
func TestLossLoggerRateLimited(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hook := LossLogger(logger, func() time.Time { return now })
	until := now.Add(6 * time.Minute)
	for tag := range 200 {
		hook(redisstore.LossEvent{Tag: tag, Until: until})
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines for one loss within a minute: %s", len(lines), buf.String())
	}
	now = now.Add(61 * time.Second)
	hook(redisstore.LossEvent{Tag: 200, Until: until})
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines after a minute", len(lines))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	if m["level"] != "ERROR" || m["tags_in_quarantine"] != float64(201) || m["new_since_last_line"] != float64(200) || m["until"] != until.Format(time.RFC3339) {
		t.Fatalf("line %v", m)
	}
}

func TestStoreConfigCheck(t *testing.T) {
	sentinel := SentinelConfig{MasterName: "m", Addrs: []string{"s1:26379", "s2:26379"}}
	for _, tc := range []struct {
		sc StoreConfig
		ok bool
	}{
		{StoreConfig{Type: "memory"}, true},
		{StoreConfig{Type: "disk"}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{ReplicaAcks: 1}}, true},
		{StoreConfig{Type: "redis", Redis: RedisConfig{ReplicaAcks: 1, Cluster: true}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{ReplicaAcks: 1, ReplicaAckTimeout: time.Second}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{ReplicaAcks: 2, Timeout: 2 * time.Second, ReplicaAckTimeout: time.Second}}, true},
		{StoreConfig{Type: "redis", Redis: RedisConfig{ReplicaAcks: -1}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: sentinel}}, true},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: sentinel, ReplicaAcks: 1}}, true},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: sentinel, Addrs: []string{"r:6379"}}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: sentinel, Cluster: true}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: SentinelConfig{Addrs: sentinel.Addrs}}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: SentinelConfig{MasterName: "m"}}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: SentinelConfig{SentinelPasswordFile: "/p"}}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"r:6379"}, Username: "u", PasswordFile: "/p", TLS: &RedisTLSConfig{CAFile: "/ca", CertFile: "/c", KeyFile: "/k"}}}, true},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"r:6379"}, PasswordFile: "/p", PasswordEnv: "P"}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: SentinelConfig{MasterName: "m", Addrs: sentinel.Addrs, SentinelPasswordFile: "/p", SentinelPasswordEnv: "P"}}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"r:6379"}, TLS: &RedisTLSConfig{CertFile: "/c"}}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"r:6379"}, TLS: &RedisTLSConfig{KeyFile: "/k"}}}, false},
		{StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"r:6379"}, TLS: &RedisTLSConfig{}}}, true},
	} {
		if err := tc.sc.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.sc, err, tc.ok)
		}
	}
}

// A Sentinel section that Check would refuse still opens a store that refuses every
// claim (fails closed) and says why, for a caller that skips Check.
func TestOpenStoreSentinelMisconfigured(t *testing.T) {
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: SentinelConfig{Addrs: []string{"127.0.0.1:1"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Replay.Claim(context.Background(), "k", time.Minute)
	if errcode.CodeOf(err) != errcode.StoreUnavailable || !strings.Contains(err.Error(), "master name") {
		t.Fatalf("claim: %v", err)
	}
}

// The Sentinel form as an operator writes it (docs/operator.md).
func TestStoreConfigSentinelYAML(t *testing.T) {
	var sc StoreConfig
	err := ParseYAML([]byte(`type: redis
redis:
  sentinel:
    master_name: dialogtrust
    addrs: [10.0.0.1:26379, 10.0.0.2:26379]
    sentinel_username: watcher
    sentinel_password_file: /run/secrets/sentinel-password
  username: dialogtrust
  password_env: REDIS_PASSWORD
  tls: {ca_file: /etc/redis-ca/ca.crt}
  replica_acks: 1
`), &sc)
	r := sc.Redis
	s := r.Sentinel
	if err != nil || s.MasterName != "dialogtrust" || len(s.Addrs) != 2 || s.SentinelUsername != "watcher" ||
		s.SentinelPasswordFile != "/run/secrets/sentinel-password" || r.Username != "dialogtrust" ||
		r.PasswordEnv != "REDIS_PASSWORD" || r.TLS == nil || r.TLS.CAFile != "/etc/redis-ca/ca.crt" || sc.Check() != nil {
		t.Fatalf("%v %+v %v", err, sc, sc.Check())
	}
	sc.Redis.Addrs = []string{"10.0.0.9:6379"}
	if err := sc.Check(); err == nil || !strings.Contains(err.Error(), "not with store.redis.addrs") {
		t.Fatalf("sentinel and addrs: %v", err)
	}
}

// An empty tls section is TLS with the system's roots; no section is plain TCP.
func TestStoreConfigEmptyTLS(t *testing.T) {
	for body, want := range map[string]bool{"type: redis\nredis: {addrs: [\"r:6379\"], tls: {}}\n": true, "type: redis\nredis: {addrs: [\"r:6379\"]}\n": false} {
		var sc StoreConfig
		if err := ParseYAML([]byte(body), &sc); err != nil || (sc.Redis.TLS != nil) != want {
			t.Errorf("%q: %v, TLS %+v, want on=%v", body, err, sc.Redis.TLS, want)
		}
	}
}

// A password written into the file is refused, wherever it is, with the members to use
// instead; so is one in a sentinel section.
func TestStoreConfigRefusesInlinePassword(t *testing.T) {
	for _, body := range []string{
		"type: redis\nredis: {addrs: [\"r:6379\"], password: hunter2}\n",
		"type: redis\nredis: {addrs: [\"r:6379\"], password: \"\"}\n",
		"type: redis\nredis: {sentinel: {master_name: m, addrs: [\"s:26379\"], password: hunter2}}\n",
		"type: redis\nredis: {sentinel: {master_name: m, addrs: [\"s:26379\"], sentinel_password: hunter2}}\n",
	} {
		var sc StoreConfig
		err := ParseYAML([]byte(body), &sc)
		if err == nil || !strings.Contains(err.Error(), "password_file") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v, want a refusal naming password_file without the password", body, err)
		}
	}
}

// The password files and variables are read when the client is made; an unreadable or
// empty one stops the start, naming the member and not the contents.
func TestRedisClientPasswordSources(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_REDIS_UNSET_PASSWORD", "")
	addrs := []string{"127.0.0.1:1"}
	for _, tc := range []struct {
		r    RedisConfig
		want string
	}{
		{RedisConfig{Addrs: addrs, PasswordFile: filepath.Join(dir, "missing")}, "store.redis.password_file"},
		{RedisConfig{Addrs: addrs, PasswordFile: empty}, "is empty"},
		{RedisConfig{Addrs: addrs, PasswordEnv: "TEST_REDIS_UNSET_PASSWORD"}, "store.redis.password_env"},
		{RedisConfig{Sentinel: SentinelConfig{MasterName: "m", Addrs: addrs, SentinelPasswordEnv: "TEST_REDIS_UNSET_PASSWORD"}}, "store.redis.sentinel.sentinel_password_env"},
		{RedisConfig{Addrs: addrs, TLS: &RedisTLSConfig{CAFile: notPEM}}, "no PEM certificate"},
		{RedisConfig{Addrs: addrs, TLS: &RedisTLSConfig{CertFile: notPEM, KeyFile: notPEM}}, "cert_file and key_file"},
	} {
		c, err := RedisClient(tc.r)
		if err == nil {
			_ = c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.r, err, tc.want)
		}
		if _, err := OpenStore(StoreConfig{Type: "redis", Redis: tc.r}, nil); err == nil {
			t.Errorf("%+v: OpenStore opened", tc.r)
		}
	}
}

// Issue 23 point 1: one store section is one Redis client. The records the section
// opens (a stateful ingress's dialog records, its handoff records) go through the
// replay store's client: once the store is closed, they fail with that client closed,
// where a client of their own would still be dialling.
func TestStoreRecordsShareTheClient(t *testing.T) {
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{"127.0.0.1:1"}, Prefix: "p:"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dialogs, handoffs := st.Records(), st.Records()
	st.Close()
	for name, r := range map[string]store.Records{"dialog records": dialogs, "handoff records": handoffs} {
		_, err := r.Get(context.Background(), "k")
		if err == nil || !strings.Contains(err.Error(), redis.ErrClosed.Error()) {
			t.Errorf("%s after the store closed: %v, want the shared client closed", name, err)
		}
	}
	mem, err := OpenStore(StoreConfig{Type: "memory"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mem.Records(), mem.Records(); a == b {
		t.Error("the memory store's records are one set: each user's are bounded apart")
	}
}
