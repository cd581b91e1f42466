package proxyservice

import (
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"io"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// The ingress store's Redis credentials and TLS come from the environment
// (DIALOGTRUST_PROXY_INGRESS_REDIS_*), as at the services; without an ingress section
// they are an error, and -check-config refuses two password sources.
func TestProxyIngressRedisEnv(t *testing.T) {
	yaml := checkedIngressYAML +
		"  store: {type: redis, redis: {addrs: [\"127.0.0.1:6379\"], password_file: /run/secrets/redis/password}}\n"
	file := testkit.WriteTemp(t, "p.yaml", yaml)
	cfg, _, err := configSpec.Load([]string{"-config", file}, []string{
		EnvPrefix + "INGRESS_REDIS_USERNAME=t1",
		EnvPrefix + "INGRESS_REDIS_PASSWORD_ENV=REDIS_PASSWORD",
		EnvPrefix + "INGRESS_REDIS_TLS_CA_FILE=/etc/redis-ca/ca.crt",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Ingress.Store.Redis
	if r.Username != "t1" || r.PasswordEnv != "REDIS_PASSWORD" || r.PasswordFile != "" || r.TLS == nil || r.TLS.CAFile != "/etc/redis-ca/ca.crt" {
		t.Fatalf("%+v", r)
	}
	egress := testkit.WriteTemp(t, "e.yaml", checkedEgressYAML)
	if _, _, err := configSpec.Load([]string{"-config", egress}, []string{EnvPrefix + "INGRESS_REDIS_USERNAME=t1"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "no ingress section") {
		t.Fatalf("without an ingress section: %v", err)
	}
	both := testkit.WriteTemp(t, "both.yaml", strings.Replace(yaml, "password_file:", "password_env: P, password_file:", 1))
	err = kit.Run(t.Context(), Program, []string{"-check-config", "-config", both}, nil, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "password_file and password_env") {
		t.Fatalf("two password sources: %v", err)
	}
}
