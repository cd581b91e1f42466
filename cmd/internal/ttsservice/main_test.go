package ttsservice

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/service/servicetest"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
)

// started is a tts running in this process through run(), as main runs it.
type started struct {
	url            string
	stdout, stderr *testkit.SyncBuffer
	stop           func()
}

func start(t *testing.T, args, env []string) *started {
	t.Helper()
	p := servicetest.Start(t, "tts", 10*time.Second, run, args, env)
	s := &started{url: p.URL, stdout: p.Stdout, stderr: p.Stderr}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			if err := p.Stop(); err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(s.stop)
	return s
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if v != nil {
		_ = json.Unmarshal(b, v)
	}
	return res.StatusCode
}

// The embedded default: development mode said loudly, loopback, metadata, JWKS, health;
// not ready (and every WIT check "could not be completed") while the development
// wit-issuer's JWKS does not answer.
func TestEmbeddedDefault(t *testing.T) {
	s := start(t, []string{"--listen", "127.0.0.1:0"}, []string{EnvPrefix + "WIT_JWKS_URL=http://127.0.0.1:1/jwks.json"})
	if !strings.Contains(s.stderr.String(), "DEVELOPMENT MODE") || !strings.Contains(s.stdout.String(), "tts listening on "+s.url) {
		t.Fatalf("stdout %q stderr %q", s.stdout.String(), s.stderr.String())
	}
	var md oauth.Metadata
	if getJSON(t, s.url+tts.PathMetadata, &md) != 200 || md.Issuer != s.url || md.TokenEndpoint != s.url+"/token" || md.TrustDomainsSupported[0] != "dev.local" {
		t.Fatalf("metadata %+v", md)
	}
	if getJSON(t, s.url+tts.PathHealthz, nil) != 200 {
		t.Fatal("not healthy")
	}
	var prob map[string]any
	if getJSON(t, s.url+tts.PathReadyz, &prob) != 503 || prob["code"] != "keys_unavailable" {
		t.Fatalf("ready without the WIT issuer's keys: %v", prob)
	}
	res, err := http.Get(s.url + tts.PathJWKS)
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
	if _, _, err := loadConfig([]string{"--config", file}, nil, &stderr); err == nil {
		t.Fatal("an unknown member was accepted")
	}
	write("listen: 127.0.0.1:9\ntrust_domains: [a.example]\npolicy: {lifetime: 2m}\n")
	cfg, _, err := loadConfig([]string{"--listen", "127.0.0.1:7"}, []string{EnvPrefix + "CONFIG=" + file, EnvPrefix + "LISTEN=127.0.0.1:8", EnvPrefix + "LIFETIME=90s"}, &stderr)
	if err != nil || cfg.Listen != "127.0.0.1:7" || cfg.Policy.Lifetime != 90*time.Second || cfg.TrustDomains[0] != "a.example" {
		t.Fatalf("%v %+v", err, cfg)
	}
	if _, _, err := loadConfig(nil, []string{EnvPrefix + "LISTN=x"}, &stderr); err == nil {
		t.Fatal("an unknown environment variable was accepted")
	}
	write("listen: 127.0.0.1:0\ntrust_domains: [a.example]\npolicy: {rules: [{workload: \"wimse://a.example/\"}]}\n")
	cfg, _, _ = loadConfig([]string{"--config", file}, nil, &stderr)
	if _, err := build(t.Context(), cfg, newTestLogger()); err == nil || !strings.Contains(err.Error(), "signing_key_file or data_dir") {
		t.Fatalf("no key source outside development: %v", err)
	}
	cfg, _, _ = loadConfig([]string{"--listen", "0.0.0.0:0"}, nil, &stderr)
	if _, err := build(t.Context(), cfg, newTestLogger()); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("development mode on a public address: %v", err)
	}
}

// Keys in a data directory survive a restart: the same kid signs after it.
func TestDataDirKeys(t *testing.T) {
	dir := t.TempDir()
	r1, _, err := openKeys(KeysConfig{DataDir: dir}, false, time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	r2, _, err := openKeys(KeysConfig{DataDir: dir}, false, time.Hour, time.Now)
	if err != nil || r2.Ring().Active().KID() != r1.Ring().Active().KID() {
		t.Fatalf("%v: kid changed across a restart", err)
	}
	st, _ := os.Stat(filepath.Join(dir, keysFileName))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode())
	}
}

func newTestLogger() *slogLogger { return discardLogger() }
