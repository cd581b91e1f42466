package cmdutil

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/service"
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
		{StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: SentinelConfig{Password: "p"}}}, false},
	} {
		if err := tc.sc.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.sc, err, tc.ok)
		}
	}
}

// A Sentinel section that Check would refuse still opens a store that refuses every
// claim (fails closed) and says why, for a caller that skips Check.
func TestOpenStoreSentinelMisconfigured(t *testing.T) {
	replay, _, closeFn, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Sentinel: SentinelConfig{Addrs: []string{"127.0.0.1:1"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	err = replay.Claim(context.Background(), "k", time.Minute)
	if errcode.CodeOf(err) != errcode.StoreUnavailable || !strings.Contains(err.Error(), "master name") {
		t.Fatalf("claim: %v", err)
	}
}

// The Sentinel form as an operator writes it (docs/operator.md).
func TestStoreConfigSentinelYAML(t *testing.T) {
	var sc StoreConfig
	err := service.ParseYAML([]byte(`type: redis
redis:
  sentinel:
    master_name: dialogtrust
    addrs: [10.0.0.1:26379, 10.0.0.2:26379]
    password: p
    sentinel_password: sp
  replica_acks: 1
`), &sc)
	s := sc.Redis.Sentinel
	if err != nil || s.MasterName != "dialogtrust" || len(s.Addrs) != 2 || s.Password != "p" || s.SentinelPassword != "sp" || sc.Check() != nil {
		t.Fatalf("%v %+v %v", err, sc, sc.Check())
	}
	sc.Redis.Addrs = []string{"10.0.0.9:6379"}
	if err := sc.Check(); err == nil || !strings.Contains(err.Error(), "not with store.redis.addrs") {
		t.Fatalf("sentinel and addrs: %v", err)
	}
}
