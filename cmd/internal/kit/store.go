package kit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/service"
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
// Redis Sentinel (sentinel), never both. Username, the password (PasswordFile or
// PasswordEnv, never in the file itself) and TLS are those of every form: of the node,
// of each Cluster node, of the primary and replicas behind the sentinels.
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
	// Username is the ACL user (empty: the default user of requirepass).
	Username string `yaml:"username"`
	// PasswordFile names a file holding the password (a mounted Secret; a trailing
	// newline is not part of it), PasswordEnv an environment variable holding it; at
	// most one of them.
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
	// Password only refuses an inline password with a message saying what to use.
	Password InlineSecret[redisPassword] `yaml:"password"`
	// TLS, when present (even empty: the system's roots), makes every connection TLS.
	TLS *RedisTLSConfig `yaml:"tls"`
}

// RedisTLSConfig is the store.redis.tls section: the CA the server's certificate must
// chain to (CAFile; none: the system's roots), the client certificate of mutual TLS
// (CertFile with KeyFile), and the name the server's certificate must carry
// (ServerName; none: the host of each address dialled). Always TLS 1.2 or later.
// The files are read when the store opens; a renewed certificate needs a restart.
type RedisTLSConfig struct {
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
}

// SentinelConfig: the primary the sentinels at Addrs know as MasterName
// (redisstore.NewFailoverClient). The primary is authenticated to with
// store.redis.username and its password; SentinelUsername and the sentinels' own
// password (SentinelPasswordFile or SentinelPasswordEnv) authenticate to the
// sentinels. store.redis.tls is the TLS of both.
type SentinelConfig struct {
	MasterName           string   `yaml:"master_name"`
	Addrs                []string `yaml:"addrs"`
	SentinelUsername     string   `yaml:"sentinel_username"`
	SentinelPasswordFile string   `yaml:"sentinel_password_file"`
	SentinelPasswordEnv  string   `yaml:"sentinel_password_env"`
	// Password and SentinelPassword only refuse inline passwords.
	Password         InlineSecret[primaryPassword]  `yaml:"password"`
	SentinelPassword InlineSecret[sentinelPassword] `yaml:"sentinel_password"`
}

// The secret members of store.redis and store.redis.sentinel (InlineSecret): the
// primary's password is store.redis's, also when the sentinels find the primary.
type (
	redisPassword    struct{}
	primaryPassword  struct{}
	sentinelPassword struct{}
)

func (redisPassword) SecretMember() (string, string, string) {
	return "store.redis.password", "password_file", "password_env"
}

func (primaryPassword) SecretMember() (string, string, string) {
	return "store.redis.sentinel.password", "store.redis.password_file", "store.redis.password_env"
}

func (sentinelPassword) SecretMember() (string, string, string) {
	return "store.redis.sentinel.sentinel_password", "sentinel_password_file", "sentinel_password_env"
}

// set reports whether any member is given: the section then chooses Sentinel.
func (s SentinelConfig) set() bool {
	return s.MasterName != "" || len(s.Addrs) > 0 || s.SentinelUsername != "" ||
		s.SentinelPasswordFile != "" || s.SentinelPasswordEnv != ""
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
	if r.PasswordFile != "" && r.PasswordEnv != "" {
		return fmt.Errorf("store.redis: password_file and password_env exclude each other")
	}
	if r.Sentinel.SentinelPasswordFile != "" && r.Sentinel.SentinelPasswordEnv != "" {
		return fmt.Errorf("store.redis.sentinel: sentinel_password_file and sentinel_password_env exclude each other")
	}
	if t := r.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		return fmt.Errorf("store.redis.tls: cert_file and key_file go together (the client certificate of mutual TLS)")
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

// Store is an opened store section: the replay store of single-use values and, on
// Redis, the one client that every other user of the section shares (Records, the
// shared key ring of keys.shared): one connection pool per section, however many
// kinds of state live in it.
type Store struct {
	// Replay is the replay store.
	Replay store.Replay
	// Ready is the readiness check (Redis answers PING); nil for the memory store.
	Ready  service.ReadyCheck
	sc     StoreConfig
	client redis.UniversalClient // nil for the memory store
}

// OpenStore opens the configured store section: its replay store, and on Redis its one
// client. A data loss the Redis store sees is logged on logger (LossLogger). Close
// releases the client.
func OpenStore(sc StoreConfig, logger *slog.Logger) (*Store, error) {
	switch sc.Type {
	case "memory":
		return &Store{Replay: store.NewMemory(), sc: sc}, nil
	case "redis":
		client, err := RedisClient(sc.Redis)
		if err != nil {
			return nil, err
		}
		opts := sc.Redis.options()
		if sc.Redis.LossQuarantine > 0 {
			opts = append(opts, redisstore.WithLossQuarantine(sc.Redis.LossQuarantine))
		}
		if logger != nil {
			opts = append(opts, redisstore.WithLossHook(LossLogger(logger, time.Now)))
		}
		if sc.Redis.ReplicaAcks > 0 {
			opts = append(opts, redisstore.WithReplicaAcks(sc.Redis.ReplicaAcks, sc.Redis.ReplicaAckTimeout))
		}
		ping := func(ctx context.Context) error {
			if err := client.Ping(ctx).Err(); err != nil {
				// A refused password (WRONGPASS, NOAUTH) or a failed TLS handshake is
				// the store being unavailable, like a Redis that does not answer.
				return errcode.Unavailable(errcode.StoreUnavailable, err, "redis ping")
			}
			return nil
		}
		return &Store{Replay: redisstore.NewReplay(client, opts...), Ready: ping, sc: sc, client: client}, nil
	}
	return nil, fmt.Errorf("store.type %q: memory or redis", sc.Type)
}

// OpenStoreOn is OpenStore for s, which closes the store when it stops.
func OpenStoreOn(s *Server, sc StoreConfig, logger *slog.Logger) (*Store, error) {
	st, err := OpenStore(sc, logger)
	if err != nil {
		return nil, err
	}
	s.OnClose(st.Close)
	return st, nil
}

// ReadyChecks is the store's readiness check as the first of a service's checks, or
// none for the memory store.
func (st *Store) ReadyChecks() []service.ReadyCheck {
	if st.Ready == nil {
		return nil
	}
	return []service.ReadyCheck{st.Ready}
}

// Records are dialog or handoff records in the section's backend: on Redis through its
// one client, under its prefix; in memory a set of their own (each bounded apart, as
// store.NewMemoryRecords is).
func (st *Store) Records() store.Records {
	if st.client == nil {
		return store.NewMemoryRecords()
	}
	return redisstore.NewRecords(st.client, st.sc.Redis.options()...)
}

// Close releases the Redis client; the memory store holds nothing to release.
func (st *Store) Close() {
	if st.client != nil {
		_ = st.client.Close()
	}
}

// options are the redisstore options every user of the section has: its prefix and
// timeout.
func (r RedisConfig) options() []redisstore.Option {
	var opts []redisstore.Option
	if r.Prefix != "" {
		opts = append(opts, redisstore.WithPrefix(r.Prefix))
	}
	if r.Timeout > 0 {
		opts = append(opts, redisstore.WithTimeout(r.Timeout))
	}
	return opts
}

// RedisClient is the client of the section: through the sentinels when it has a
// sentinel member, else of the node or Cluster at addrs; authenticated and over TLS as
// the section says. It reads the password files and variables and the TLS files, and
// fails when one cannot be read or is empty; their contents appear in no error.
// OpenStore, OpenSharedKeys and the proxy's dialog records use it.
func RedisClient(r RedisConfig) (redis.UniversalClient, error) {
	password, err := readPassword("store.redis", "password", r.PasswordFile, r.PasswordEnv)
	if err != nil {
		return nil, err
	}
	var tlsConfig *tls.Config
	if r.TLS != nil {
		if tlsConfig, err = r.TLS.config(); err != nil {
			return nil, err
		}
	}
	if s := r.Sentinel; s.set() {
		sentinelPassword, err := readPassword("store.redis.sentinel", "sentinel_password", s.SentinelPasswordFile, s.SentinelPasswordEnv)
		if err != nil {
			return nil, err
		}
		return redisstore.NewFailoverClient(redisstore.Sentinel{
			MasterName: s.MasterName, Addrs: s.Addrs,
			Username: r.Username, Password: password,
			SentinelUsername: s.SentinelUsername, SentinelPassword: sentinelPassword,
			TLS: tlsConfig,
		}), nil
	}
	var opts []redisstore.ClientOption
	if r.Username != "" || password != "" {
		opts = append(opts, redisstore.WithAuth(r.Username, password))
	}
	if tlsConfig != nil {
		opts = append(opts, redisstore.WithTLS(tlsConfig))
	}
	return redisstore.NewClient(r.Addrs, r.Cluster, opts...), nil
}

// readPassword reads the password of section (member name "password" or
// "sentinel_password") from file or from the environment variable env; neither is no
// password.
func readPassword(section, name, file, env string) (string, error) {
	if file == "" && env == "" {
		return "", nil
	}
	return ReadSecret(section+"."+name, file, env)
}

// ReadSecret is the one reader of a secret the configuration names but never holds
// (a password, a client secret, the shared key ring's secret): the file's content
// without its trailing line end (a mounted Kubernetes Secret), else the environment
// variable env. member names the configuration member for the errors ("peer_client.secret"
// gives "peer_client.secret_file: ..."); an empty file or an unset variable is an error,
// never an empty secret.
func ReadSecret(member, file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_file: %w", member, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%s_file: %s is empty", member, file)
		}
		return v, nil
	}
	v := os.Getenv(env)
	if v == "" {
		return "", fmt.Errorf("%s_env: %s is not set", member, env)
	}
	return v, nil
}

// config is the client's tls.Config: TLS 1.2 or later, the CA of ca_file (else the
// system's roots), the client certificate of cert_file and key_file.
func (t RedisTLSConfig) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("store.redis.tls.ca_file: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store.redis.tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = roots
	}
	if t.CertFile != "" || t.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("store.redis.tls: cert_file and key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
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

// RedisEnv binds the environment overrides of store.redis's credentials and TLS, after
// the service's prefix and then namePrefix ("" for the services, "INGRESS_" for the
// proxy's ingress store), for a configuration whose store section storeOf returns (or
// an error when it has none): REDIS_USERNAME, REDIS_PASSWORD_FILE, REDIS_PASSWORD_ENV,
// REDIS_TLS_CA_FILE, REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE, REDIS_TLS_SERVER_NAME,
// REDIS_SENTINEL_SENTINEL_USERNAME, REDIS_SENTINEL_SENTINEL_PASSWORD_FILE and
// REDIS_SENTINEL_SENTINEL_PASSWORD_ENV. A password source replaces the other one a file
// may name (at most one is allowed); a TLS variable switches TLS on. An empty value is
// an error: unset the variable to keep the file's member.
func RedisEnv[C any](namePrefix string, storeOf func(*C) (*StoreConfig, error)) []EnvVar[C] {
	set := func(apply func(r *RedisConfig, v string)) func(*C, string) error {
		return func(cfg *C, v string) error {
			if v == "" {
				return fmt.Errorf("empty: unset the variable to keep the file's member")
			}
			sc, err := storeOf(cfg)
			if err != nil {
				return err
			}
			apply(&sc.Redis, v)
			return nil
		}
	}
	tlsMember := func(field func(*RedisTLSConfig) *string) func(*RedisConfig, string) {
		return func(r *RedisConfig, v string) {
			if r.TLS == nil {
				r.TLS = &RedisTLSConfig{}
			}
			*field(r.TLS) = v
		}
	}
	vars := []struct {
		name  string
		apply func(*RedisConfig, string)
	}{
		{"REDIS_USERNAME", func(r *RedisConfig, v string) { r.Username = v }},
		{"REDIS_PASSWORD_FILE", func(r *RedisConfig, v string) { r.PasswordFile, r.PasswordEnv = v, "" }},
		{"REDIS_PASSWORD_ENV", func(r *RedisConfig, v string) { r.PasswordFile, r.PasswordEnv = "", v }},
		{"REDIS_TLS_CA_FILE", tlsMember(func(t *RedisTLSConfig) *string { return &t.CAFile })},
		{"REDIS_TLS_CERT_FILE", tlsMember(func(t *RedisTLSConfig) *string { return &t.CertFile })},
		{"REDIS_TLS_KEY_FILE", tlsMember(func(t *RedisTLSConfig) *string { return &t.KeyFile })},
		{"REDIS_TLS_SERVER_NAME", tlsMember(func(t *RedisTLSConfig) *string { return &t.ServerName })},
		{"REDIS_SENTINEL_SENTINEL_USERNAME", func(r *RedisConfig, v string) { r.Sentinel.SentinelUsername = v }},
		{"REDIS_SENTINEL_SENTINEL_PASSWORD_FILE", func(r *RedisConfig, v string) {
			r.Sentinel.SentinelPasswordFile, r.Sentinel.SentinelPasswordEnv = v, ""
		}},
		{"REDIS_SENTINEL_SENTINEL_PASSWORD_ENV", func(r *RedisConfig, v string) {
			r.Sentinel.SentinelPasswordFile, r.Sentinel.SentinelPasswordEnv = "", v
		}},
	}
	out := make([]EnvVar[C], len(vars))
	for i, v := range vars {
		out[i] = EnvVar[C]{Name: namePrefix + v.name, Set: set(v.apply)}
	}
	return out
}
