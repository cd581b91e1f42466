package ttsservice

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit/kittest"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
)

// start runs a tts in this process through Program.Run, as main runs it; it must stop
// without an error.
func start(t *testing.T, args, env []string) *kittest.Process {
	t.Helper()
	p := kittest.Start(t, "tts", 10*time.Second, Program.Run, args, env)
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return p
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	status, b := testkit.Get(t, url)
	if v != nil {
		_ = json.Unmarshal(b, v)
	}
	return status
}

// The embedded default: development mode said loudly, loopback, metadata, JWKS, health;
// not ready (and every WIT check "could not be completed") while the development
// wit-issuer's JWKS does not answer.
func TestEmbeddedDefault(t *testing.T) {
	s := start(t, []string{"--listen", "127.0.0.1:0"}, []string{EnvPrefix + "WIT_JWKS_URL=http://127.0.0.1:1/jwks.json"})
	if !strings.Contains(s.Stderr.String(), "DEVELOPMENT MODE") || !strings.Contains(s.Stdout.String(), "tts listening on "+s.URL) {
		t.Fatalf("stdout %q stderr %q", s.Stdout.String(), s.Stderr.String())
	}
	var md oauth.Metadata
	if getJSON(t, s.URL+tts.PathMetadata, &md) != 200 || md.Issuer != s.URL || md.TokenEndpoint != s.URL+"/token" || md.TrustDomainsSupported[0] != "dev.local" {
		t.Fatalf("metadata %+v", md)
	}
	if getJSON(t, s.URL+tts.PathHealthz, nil) != 200 {
		t.Fatal("not healthy")
	}
	var prob map[string]any
	if getJSON(t, s.URL+tts.PathReadyz, &prob) != 503 || prob["code"] != "keys_unavailable" {
		t.Fatalf("ready without the WIT issuer's keys: %v", prob)
	}
	res, err := http.Get(s.URL + tts.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if set, err := keys.ParseJWKS(b); err != nil || len(set.Keys()) != 1 {
		t.Fatalf("JWKS %s: %v", b, err)
	}
	if strings.Contains(string(b), `"d"`) {
		t.Fatal("the JWKS publishes a private key")
	}
}

// Configuration: strict YAML, environment over file, flags over environment; unknown
// names are errors; outside development a key source is required.
func TestConfigLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tts.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	write("listen: 127.0.0.1:9\ntrust_domains: [a.example]\nlisen: typo\n")
	if _, _, err := configSpec.Load([]string{"--config", file}, nil, &stderr); err == nil {
		t.Fatal("an unknown member was accepted")
	}
	write("listen: 127.0.0.1:9\ntrust_domains: [a.example]\npolicy: {lifetime: 2m}\n")
	cfg, _, err := configSpec.Load([]string{"--listen", "127.0.0.1:7"}, []string{EnvPrefix + "CONFIG=" + file, EnvPrefix + "LISTEN=127.0.0.1:8", EnvPrefix + "LIFETIME=90s"}, &stderr)
	if err != nil || cfg.Listen != "127.0.0.1:7" || cfg.Policy.Lifetime != 90*time.Second || cfg.TrustDomains[0] != "a.example" {
		t.Fatalf("%v %+v", err, cfg)
	}
	if _, _, err := configSpec.Load(nil, []string{EnvPrefix + "LISTN=x"}, &stderr); err == nil {
		t.Fatal("an unknown environment variable was accepted")
	}
	write("listen: 127.0.0.1:0\ntrust_domains: [a.example]\npolicy: {rules: [{workload: \"wimse://a.example/\"}]}\n")
	cfg, _, _ = configSpec.Load([]string{"--config", file}, nil, &stderr)
	if _, err := build(t.Context(), cfg, newTestLogger()); err == nil || !strings.Contains(err.Error(), "signing_key_file or data_dir") {
		t.Fatalf("no key source outside development: %v", err)
	}
	cfg, _, _ = configSpec.Load([]string{"--listen", "0.0.0.0:0"}, nil, &stderr)
	if _, err := build(t.Context(), cfg, newTestLogger()); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("development mode on a public address: %v", err)
	}
}

// The keys and tls sections read as before their members moved into cmdutil's shared
// types: the shared members and the TTS's own step_interval side by side, an unknown
// member refused.
func TestKeysAndTLSSections(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tts.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("keys: {alg: EdDSA, data_dir: /k, rotation_period: 1h, publish_delay: 2m, step_interval: 5s}\ntls: {cert_file: c.pem, key_file: k.pem}\n")
	cfg, _, err := configSpec.Load([]string{"--config", file}, []string{EnvPrefix + "SIGNING_KEY_FILE=/s.jwk"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Keys
	if k.Alg != "EdDSA" || k.DataDir != "/k" || k.SigningKeyFile != "/s.jwk" || k.RotationPeriod != time.Hour ||
		k.PublishDelay != 2*time.Minute || k.StepInterval != 5*time.Second || cfg.TLS.CertFile != "c.pem" || cfg.TLS.KeyFile != "k.pem" {
		t.Fatalf("%+v %+v", cfg.Keys, cfg.TLS)
	}
	// keys.shared from the environment replaces the file's secret source.
	write("keys: {shared: {secret_file: /f}, jwks_max_age: 30s}\n")
	cfg, _, err = configSpec.Load([]string{"--config", file}, []string{EnvPrefix + "KEYS_SHARED_SECRET_ENV=RING"}, io.Discard)
	if err != nil || cfg.Keys.Shared == nil || cfg.Keys.Shared.SecretEnv != "RING" || cfg.Keys.Shared.SecretFile != "" || cfg.Keys.JWKSMaxAge != 30*time.Second {
		t.Fatalf("keys.shared from the environment: %v %+v", err, cfg.Keys)
	}
	cfg, _, err = configSpec.Load(nil, []string{EnvPrefix + "KEYS_SHARED_SECRET_FILE=/run/secrets/ring"}, io.Discard)
	if err != nil || cfg.Keys.Shared == nil || cfg.Keys.Shared.SecretFile != "/run/secrets/ring" {
		t.Fatalf("KEYS_SHARED_SECRET_FILE: %v %+v", err, cfg.Keys)
	}
	write("keys: {data_dir: /k, step: 5s}\n")
	if _, _, err := configSpec.Load([]string{"--config", file}, nil, io.Discard); err == nil {
		t.Fatal("an unknown keys member was accepted")
	}
}

// Keys in a data directory survive a restart: the same kid signs after it.
func TestDataDirKeys(t *testing.T) {
	dir := t.TempDir()
	r1, _, err := kit.OpenLocalKeys(kit.KeysConfig{DataDir: dir}, keysSpec(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	r2, _, err := kit.OpenLocalKeys(kit.KeysConfig{DataDir: dir}, keysSpec(time.Hour))
	if err != nil || r2.Ring().Active().KID() != r1.Ring().Active().KID() {
		t.Fatalf("%v: kid changed across a restart", err)
	}
	st, _ := os.Stat(filepath.Join(dir, keysFileName))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode())
	}
}

func newTestLogger() *slogLogger { return discardLogger() }
