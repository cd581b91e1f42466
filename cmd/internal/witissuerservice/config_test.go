package witissuerservice

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// The embedded default is development mode on loopback with an in-memory store.
func TestEmbeddedDefault(t *testing.T) {
	cfg, src, err := configSpec.Load(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !src.Embedded || cfg.Listen != "127.0.0.1:8080" || cfg.Issuer != "" || cfg.Store.Type != "memory" ||
		len(cfg.TrustDomains) != 1 || cfg.TrustDomains[0] != "dev.local" || cfg.Auth.Dev == nil ||
		cfg.Auth.X509SVID != nil || cfg.Auth.Assertion != nil || len(cfg.Routes) != 1 ||
		strings.Join(cfg.Routes[0].Methods, ",") != "dev" || cfg.Keys.DataDir != "" {
		t.Fatalf("embedded default: %+v", cfg)
	}
}

const fullConfig = `
listen: 127.0.0.1:9443
issuer: https://wit.example.org
public_url: https://wit.example.org
trust_domains: [example.org]
tls:
  cert_file: /run/spire/svid.pem
  key_file: /run/spire/svid_key.pem
keys:
  alg: EdDSA
  data_dir: /var/lib/wit-issuer
  rotation_period: 720h
  publish_delay: 15m
store:
  type: redis
  redis:
    addrs: [10.0.0.1:6379]
    prefix: "wit:"
    timeout: 250ms
policy:
  allowed_algs: [ES256]
  max_lifetime: 30m
  default_lifetime: 10m
  rules:
    - {from_prefix: "spiffe://example.org/", to_prefix: "wimse://example.org/"}
auth:
  x509svid:
    bundles:
      - {trust_domain: example.org, file: /run/spire/bundle.pem}
  assertion:
    max_lifetime: 2m
    workloads:
      - id: wimse://example.org/batch/reporter
        jwk: {kty: OKP, crv: Ed25519, alg: EdDSA, x: 11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo}
routes:
  - {path: /v1/wit, methods: [x509svid, assertion]}
log:
  level: warn
proof_window: 30s
shutdown_timeout: 5s
`

// The configuration file is strict YAML: every documented member parses, and an unknown
// member anywhere (a typo) is an error instead of being silently ignored.
func TestConfigStrictYAML(t *testing.T) {
	cfg, _, err := configSpec.Load([]string{"--config", testkit.WriteTemp(t, "c.yaml", fullConfig)}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Keys.Alg != keys.EdDSA || cfg.Keys.RotationPeriod != 720*time.Hour || cfg.Policy.MaxLifetime != 30*time.Minute ||
		cfg.Store.Redis.Timeout != 250*time.Millisecond || cfg.Auth.Assertion.Workloads[0].JWK["crv"] != "Ed25519" ||
		cfg.Policy.Rules[0].ToPrefix != "wimse://example.org/" || cfg.ProofWindow != 30*time.Second ||
		cfg.TLS.CertFile != "/run/spire/svid.pem" || cfg.TLS.KeyFile != "/run/spire/svid_key.pem" || cfg.Keys.PublishDelay != 15*time.Minute {
		t.Fatalf("parsed %+v", cfg)
	}
	// The inline JWK survives the YAML-to-JSON trip.
	j, _ := json.Marshal(cfg.Auth.Assertion.Workloads[0].JWK)
	if _, err := keys.ParsePublicJWK(j); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"top-level typo": "listn: 127.0.0.1:1\n",
		"nested typo":    "policy:\n  max_lifetme: 1h\n",
		"deep typo":      "auth:\n  x509svid:\n    bundles:\n      - {trust_domain: a, fle: b}\n",
		"wrong type":     "policy:\n  max_lifetime: [1h]\n",
		"bad duration":   "policy:\n  max_lifetime: soon\n",
		"duplicate key":  "listen: a\nlisten: b\n",
	} {
		if _, _, err := configSpec.Load([]string{"--config", testkit.WriteTemp(t, "bad.yaml", bad)}, nil, io.Discard); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Precedence: flags over environment over the file over the embedded default. An
// unknown DIALOGTRUST_WIT_ISSUER_* variable is an error.
func TestConfigEnvAndFlagPrecedence(t *testing.T) {
	file := testkit.WriteTemp(t, "c.yaml", "listen: 127.0.0.1:1001\ntrust_domains: [a.example]\nroutes: [{path: /v1/wit, methods: [dev]}]\nauth: {dev: {prefixes: ['wimse://a.example/']}}\n")
	env := []string{"DIALOGTRUST_WIT_ISSUER_CONFIG=" + file}
	cfg, src, err := configSpec.Load(nil, env, io.Discard)
	if err != nil || cfg.Listen != "127.0.0.1:1001" || src.File != file || src.Embedded {
		t.Fatalf("file via env: %v %+v", err, cfg)
	}
	env = append(env, "DIALOGTRUST_WIT_ISSUER_LISTEN=127.0.0.1:1002", "DIALOGTRUST_WIT_ISSUER_MAX_LIFETIME=20m",
		"DIALOGTRUST_WIT_ISSUER_TRUST_DOMAINS=a.example, b.example", "DIALOGTRUST_WIT_ISSUER_REDIS_CLUSTER=true", "UNRELATED=1")
	cfg, _, err = configSpec.Load(nil, env, io.Discard)
	if err != nil || cfg.Listen != "127.0.0.1:1002" || cfg.Policy.MaxLifetime != 20*time.Minute ||
		strings.Join(cfg.TrustDomains, ",") != "a.example,b.example" || !cfg.Store.Redis.Cluster {
		t.Fatalf("env: %v %+v", err, cfg)
	}
	cfg, _, err = configSpec.Load([]string{"--listen", "127.0.0.1:1003", "--log-level", "debug"}, env, io.Discard)
	if err != nil || cfg.Listen != "127.0.0.1:1003" || cfg.Log.Level != "debug" {
		t.Fatalf("flag: %v %+v", err, cfg)
	}
	// --config beats the environment's file.
	other := testkit.WriteTemp(t, "o.yaml", "listen: 127.0.0.1:1004\n")
	cfg, _, err = configSpec.Load([]string{"--config", other}, []string{"DIALOGTRUST_WIT_ISSUER_CONFIG=" + file}, io.Discard)
	if err != nil || cfg.Listen != "127.0.0.1:1004" {
		t.Fatalf("--config: %v %+v", err, cfg)
	}
	if _, _, err := configSpec.Load(nil, []string{"DIALOGTRUST_WIT_ISSUER_LISTN=x"}, io.Discard); err == nil {
		t.Fatal("unknown environment variable accepted")
	}
	if _, _, err := configSpec.Load(nil, []string{"DIALOGTRUST_WIT_ISSUER_MAX_LIFETIME=long"}, io.Discard); err == nil {
		t.Fatal("bad duration in the environment accepted")
	}
	if _, _, err := configSpec.Load([]string{"--nope"}, nil, io.Discard); err == nil {
		t.Fatal("unknown flag accepted")
	}
}

// DIALOGTRUST_WIT_ISSUER_KEYS_SHARED_SECRET_FILE and _SECRET_ENV switch keys.shared on
// with that secret source, replacing the file's; keys.step_interval and
// keys.jwks_max_age parse.
func TestConfigSharedKeysEnv(t *testing.T) {
	file := testkit.WriteTemp(t, "c.yaml", "keys: {shared: {secret_env: FROM_FILE}, step_interval: 5s, jwks_max_age: 1m}\n")
	cfg, _, err := configSpec.Load([]string{"--config", file}, nil, io.Discard)
	if err != nil || cfg.Keys.Shared == nil || cfg.Keys.Shared.SecretEnv != "FROM_FILE" || cfg.Keys.StepInterval != 5*time.Second ||
		cfg.Keys.RotationStep() != 5*time.Second || cfg.Keys.JWKSMaxAge != time.Minute {
		t.Fatalf("file: %v %+v", err, cfg.Keys)
	}
	cfg, _, err = configSpec.Load([]string{"--config", file}, []string{EnvPrefix + "KEYS_SHARED_SECRET_FILE=/run/secrets/ring"}, io.Discard)
	if err != nil || cfg.Keys.Shared == nil || cfg.Keys.Shared.SecretFile != "/run/secrets/ring" || cfg.Keys.Shared.SecretEnv != "" {
		t.Fatalf("secret_file from the environment: %v %+v", err, cfg.Keys.Shared)
	}
	cfg, _, err = configSpec.Load(nil, []string{EnvPrefix + "KEYS_SHARED_SECRET_ENV=RING_SECRET"}, io.Discard)
	if err != nil || cfg.Keys.Shared == nil || cfg.Keys.Shared.SecretEnv != "RING_SECRET" || cfg.Keys.Shared.SecretFile != "" {
		t.Fatalf("secret_env from the environment over the embedded default: %v %+v", err, cfg.Keys.Shared)
	}
	if _, _, err := configSpec.Load(nil, []string{EnvPrefix + "KEYS_SHARED_SECRET_FILE="}, io.Discard); err == nil {
		t.Fatal("an empty KEYS_SHARED_SECRET_FILE was accepted")
	}
	if cfg, _, err := configSpec.Load(nil, nil, io.Discard); err != nil || cfg.Keys.Shared != nil || cfg.Keys.RotationStep() != 30*time.Second {
		t.Fatalf("embedded default: %v %+v", err, cfg.Keys)
	}
}

// The store.redis credentials and TLS come from the environment too
// (kit.RedisEnv): a password source replaces the file's, a TLS variable switches
// TLS on, and -check-config's checks then see both password sources of a file that
// names two.
func TestConfigRedisEnv(t *testing.T) {
	file := testkit.WriteTemp(t, "c.yaml", "store: {type: redis, redis: {addrs: [\"r:6379\"], password_env: FROM_FILE}}\n")
	cfg, _, err := configSpec.Load([]string{"--config", file}, []string{
		EnvPrefix + "REDIS_USERNAME=dialogtrust",
		EnvPrefix + "REDIS_PASSWORD_FILE=/run/secrets/redis/password",
		EnvPrefix + "REDIS_TLS_CA_FILE=/etc/redis-ca/ca.crt",
		EnvPrefix + "REDIS_TLS_SERVER_NAME=redis.example",
	}, io.Discard)
	r := cfg.Store.Redis
	if err != nil || r.Username != "dialogtrust" || r.PasswordFile != "/run/secrets/redis/password" || r.PasswordEnv != "" ||
		r.TLS == nil || r.TLS.CAFile != "/etc/redis-ca/ca.crt" || r.TLS.ServerName != "redis.example" || cfg.Store.Check() != nil {
		t.Fatalf("%v %+v", err, r)
	}
	cfg, _, err = configSpec.Load([]string{"--config", file}, []string{EnvPrefix + "REDIS_TLS_CERT_FILE=/c"}, io.Discard)
	if err != nil || cfg.Store.Check() == nil || !strings.Contains(cfg.Store.Check().Error(), "cert_file and key_file") {
		t.Fatalf("half a client certificate from the environment: %v %v", err, cfg.Store.Check())
	}
	both := testkit.WriteTemp(t, "both.yaml", "store: {type: redis, redis: {addrs: [\"r:6379\"], password_env: P, password_file: /p}}\n")
	if cfg, _, err := configSpec.Load([]string{"--config", both}, nil, io.Discard); err != nil || cfg.Store.Check() == nil {
		t.Fatalf("both password sources: %v, check %v", err, cfg.Store.Check())
	}
	cfg, _, err = configSpec.Load([]string{"--config", both}, []string{EnvPrefix + "REDIS_PASSWORD_ENV=REDIS_PASSWORD"}, io.Discard)
	if err != nil || cfg.Store.Redis.PasswordEnv != "REDIS_PASSWORD" || cfg.Store.Redis.PasswordFile != "" || cfg.Store.Check() != nil {
		t.Fatalf("the environment's password source replaces the file's two: %v %+v", err, cfg.Store.Redis)
	}
	cfg, _, err = configSpec.Load(nil, []string{
		EnvPrefix + "REDIS_SENTINEL_MASTER_NAME=m", EnvPrefix + "REDIS_SENTINEL_ADDRS=s1:26379",
		EnvPrefix + "REDIS_SENTINEL_SENTINEL_USERNAME=watcher", EnvPrefix + "REDIS_SENTINEL_SENTINEL_PASSWORD_ENV=SENTINEL_PASSWORD",
	}, io.Discard)
	if s := cfg.Store.Redis.Sentinel; err != nil || s.SentinelUsername != "watcher" || s.SentinelPasswordEnv != "SENTINEL_PASSWORD" {
		t.Fatalf("sentinel: %v %+v", err, cfg.Store.Redis.Sentinel)
	}
	for _, env := range []string{EnvPrefix + "REDIS_PASSWORD_FILE=", EnvPrefix + "REDIS_SENTINEL_PASSWORD=x", EnvPrefix + "REDIS_PASSWORD=x"} {
		if _, _, err := configSpec.Load(nil, []string{env}, io.Discard); err == nil {
			t.Errorf("%s accepted", env)
		}
	}
	inline := testkit.WriteTemp(t, "inline.yaml", "store: {type: redis, redis: {addrs: [\"r:6379\"], password: hunter2}}\n")
	if _, _, err := configSpec.Load([]string{"--config", inline}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "password_file") {
		t.Fatalf("inline password: %v", err)
	}
}

// A workload auth.assertion registers is never issued through auth.dev, whether or not a
// route names assertion (witissuer.DevOptions.Registered): the configuration said that it
// proves a key. An identity auth.assertion does not name still is.
func TestDevSkipsAssertionWorkloads(t *testing.T) {
	auth := AuthConfig{
		Dev:       &DevConfig{Prefixes: []string{"wimse://a.example/"}},
		Assertion: &AssertionConfig{Workloads: []WorkloadConfig{{ID: "wimse://a.example/operator", JWKFile: "unread.jwk"}}},
	}
	d, err := buildDev(auth)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(sub string) error {
		_, err := d.Authenticate(httptest.NewRequest(http.MethodPost, "/v1/wit", nil), &witissuer.Request{Sub: identifier.MustParse(sub)})
		return err
	}
	if err := ask("wimse://a.example/operator"); errcode.CodeOf(err) != errcode.Unauthenticated {
		t.Fatalf("the registered workload by the dev method: %v", err)
	}
	if err := ask("wimse://a.example/agent"); err != nil {
		t.Fatalf("an identity under the prefix: %v", err)
	}
	auth.Assertion.Workloads[0].ID = "not an identifier"
	if _, err := buildDev(auth); err == nil {
		t.Fatal("a malformed registered workload accepted")
	}
}
