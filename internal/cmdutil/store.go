package cmdutil

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// StoreConfig is the store section of both services: the replay store of single-use
// values (WPT jtis, signature nonces, request and assertion jtis).
type StoreConfig struct {
	Type  string      `yaml:"type"` // memory or redis
	Redis RedisConfig `yaml:"redis"`
}

// RedisConfig: a Redis node or Cluster (addrs, cluster), or a primary found through
// Redis Sentinel (sentinel), never both.
type RedisConfig struct {
	Addrs    []string       `yaml:"addrs"`
	Cluster  bool           `yaml:"cluster"`
	Sentinel SentinelConfig `yaml:"sentinel"`
	Prefix   string         `yaml:"prefix"`
	Timeout  time.Duration  `yaml:"timeout"`
	// LossQuarantine: how long claims are refused after the store sees that Redis lost
	// its data (redisstore.WithLossQuarantine; default redisstore.DefaultLossQuarantine).
	LossQuarantine time.Duration `yaml:"loss_quarantine"`
	// ReplicaAcks: each claim waits (WAIT) until this many replicas have it, at most
	// ReplicaAckTimeout (default 100ms), else it is refused (redisstore.WithReplicaAcks).
	// Single node with replicas only.
	ReplicaAcks       int           `yaml:"replica_acks"`
	ReplicaAckTimeout time.Duration `yaml:"replica_ack_timeout"`
}

// SentinelConfig: the primary the sentinels at Addrs know as MasterName
// (redisstore.NewFailoverClient). Username and Password authenticate to the primary,
// SentinelUsername and SentinelPassword to the sentinels.
type SentinelConfig struct {
	MasterName       string   `yaml:"master_name"`
	Addrs            []string `yaml:"addrs"`
	Username         string   `yaml:"username"`
	Password         string   `yaml:"password"`
	SentinelUsername string   `yaml:"sentinel_username"`
	SentinelPassword string   `yaml:"sentinel_password"`
}

// set reports whether any member is given: the section then chooses Sentinel.
func (s SentinelConfig) set() bool {
	return s.MasterName != "" || len(s.Addrs) > 0 || s.Username != "" || s.Password != "" ||
		s.SentinelUsername != "" || s.SentinelPassword != ""
}

// SetDefaults sets what the section leaves out: the memory store.
func (sc *StoreConfig) SetDefaults() {
	if sc.Type == "" {
		sc.Type = "memory"
	}
}

// Check validates the section without opening anything.
func (sc StoreConfig) Check() error {
	if sc.Type != "memory" && sc.Type != "redis" {
		return fmt.Errorf("store.type %q: memory or redis", sc.Type)
	}
	r := sc.Redis
	if r.ReplicaAcks < 0 || r.ReplicaAckTimeout < 0 || r.LossQuarantine < 0 || r.Timeout < 0 {
		return fmt.Errorf("store.redis: negative value")
	}
	if r.Sentinel.set() {
		switch {
		case len(r.Addrs) > 0:
			return fmt.Errorf("store.redis.sentinel: not with store.redis.addrs (the sentinels name the primary)")
		case r.Cluster:
			return fmt.Errorf("store.redis.sentinel: not with store.redis.cluster")
		case r.Sentinel.MasterName == "":
			return fmt.Errorf("store.redis.sentinel.master_name: missing")
		case len(r.Sentinel.Addrs) == 0:
			return fmt.Errorf("store.redis.sentinel.addrs: missing (one or more sentinels, host:port)")
		}
	}
	if r.ReplicaAcks > 0 {
		if r.Cluster {
			return fmt.Errorf("store.redis.replica_acks: not with cluster (WAIT must run on the claim's connection)")
		}
		timeout, ack := r.Timeout, r.ReplicaAckTimeout
		if timeout == 0 {
			timeout = redisstore.DefaultTimeout
		}
		if ack == 0 {
			ack = 100 * time.Millisecond
		}
		if ack >= timeout {
			return fmt.Errorf("store.redis.replica_ack_timeout %s must be shorter than store.redis.timeout %s", ack, timeout)
		}
	}
	return nil
}

// OpenStore opens the configured replay store. ready, when not nil, is the readiness
// check (Redis answers PING); closeFn releases the client. A data loss the Redis store
// sees is logged on logger (LossLogger).
func OpenStore(sc StoreConfig, logger *slog.Logger) (replay store.Replay, ready func(context.Context) error, closeFn func(), err error) {
	switch sc.Type {
	case "memory":
		return store.NewMemory(), nil, func() {}, nil
	case "redis":
		client := NewRedisClient(sc.Redis)
		var opts []redisstore.Option
		if sc.Redis.Prefix != "" {
			opts = append(opts, redisstore.WithPrefix(sc.Redis.Prefix))
		}
		if sc.Redis.Timeout > 0 {
			opts = append(opts, redisstore.WithTimeout(sc.Redis.Timeout))
		}
		if sc.Redis.LossQuarantine > 0 {
			opts = append(opts, redisstore.WithLossQuarantine(sc.Redis.LossQuarantine))
		}
		if logger != nil {
			opts = append(opts, redisstore.WithLossHook(LossLogger(logger, time.Now)))
		}
		if sc.Redis.ReplicaAcks > 0 {
			opts = append(opts, redisstore.WithReplicaAcks(sc.Redis.ReplicaAcks, sc.Redis.ReplicaAckTimeout))
		}
		ping := func(ctx context.Context) error { return client.Ping(ctx).Err() }
		return redisstore.NewReplay(client, opts...), ping, func() { _ = client.Close() }, nil
	}
	return nil, nil, nil, fmt.Errorf("store.type %q: memory or redis", sc.Type)
}

// NewRedisClient is the client of the section: through the sentinels when it has a
// sentinel member, else of the node or Cluster at addrs. OpenStore and the proxy's
// dialog records use it.
func NewRedisClient(r RedisConfig) redis.UniversalClient {
	if s := r.Sentinel; s.set() {
		return redisstore.NewFailoverClient(redisstore.Sentinel{
			MasterName: s.MasterName, Addrs: s.Addrs,
			Username: s.Username, Password: s.Password,
			SentinelUsername: s.SentinelUsername, SentinelPassword: s.SentinelPassword,
		})
	}
	return redisstore.NewClient(r.Addrs, r.Cluster)
}

// LossLogger returns a redisstore.WithLossHook hook that logs, at error level, that the
// replay store lost its data and until when claims are refused: once, then at most once
// a minute while further tags report it, with the count of tags so far.
func LossLogger(logger *slog.Logger, now func() time.Time) func(redisstore.LossEvent) {
	var (
		mu       sync.Mutex
		last     time.Time
		tags     int
		latest   time.Time
		unlogged int
	)
	return func(e redisstore.LossEvent) {
		mu.Lock()
		defer mu.Unlock()
		tags++
		unlogged++
		if e.Until.After(latest) {
			latest = e.Until
		}
		t := now()
		if !last.IsZero() && t.Sub(last) < time.Minute {
			return
		}
		last = t
		logger.Error("replay store lost its data (a Redis restart without persistence, a flush or an eviction?): claims are refused until every claim made before the loss has expired",
			"until", latest.UTC().Format(time.RFC3339), "tags_in_quarantine", tags, "new_since_last_line", unlogged)
		unlogged = 0
	}
}
