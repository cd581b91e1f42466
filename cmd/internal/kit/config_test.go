package kit

import (
	"errors"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCheckConfigFlag(t *testing.T) {
	for _, c := range []struct {
		in    []string
		out   []string
		check bool
	}{
		{[]string{"-listen", ":1"}, []string{"-listen", ":1"}, false},
		{[]string{"-check-config", "-listen", ":1"}, []string{"-listen", ":1"}, true},
		{[]string{"--check-config=true"}, nil, true},
		{[]string{"--check-config=false"}, nil, false},
		{[]string{"--check-config=maybe"}, []string{"--check-config=maybe"}, false},
		{[]string{"--", "-check-config"}, []string{"--", "-check-config"}, false},
		{[]string{"check-config"}, []string{"check-config"}, false},
	} {
		out, check := CheckConfigFlag(c.in)
		if !reflect.DeepEqual(out, c.out) || check != c.check {
			t.Errorf("%v: got %v %v", c.in, out, check)
		}
	}
}

type testConfig struct {
	Base     `yaml:",inline"`
	Keys     testKeys      `yaml:"keys"`
	Store    testStore     `yaml:"store"`
	TLS      testTLS       `yaml:"tls"`
	Lifetime time.Duration `yaml:"lifetime"`
	Count    int           `yaml:"count"`
}

type testKeys struct {
	Alg            string        `yaml:"alg"`
	SigningKeyFile string        `yaml:"signing_key_file"`
	DataDir        string        `yaml:"data_dir"`
	RotationPeriod time.Duration `yaml:"rotation_period"`
	PublishDelay   time.Duration `yaml:"publish_delay"`
}

type testStore struct {
	Type  string `yaml:"type"`
	Redis struct {
		Addrs   []string `yaml:"addrs"`
		Cluster bool     `yaml:"cluster"`
		Prefix  string   `yaml:"prefix"`
		// The members CommonEnv binds.
		Sentinel struct {
			MasterName       string   `yaml:"master_name"`
			Addrs            []string `yaml:"addrs"`
			Username         string   `yaml:"username"`
			Password         string   `yaml:"password"`
			SentinelUsername string   `yaml:"sentinel_username"`
			SentinelPassword string   `yaml:"sentinel_password"`
		} `yaml:"sentinel"`
	} `yaml:"redis"`
}

type testTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

func testSpec() Spec[testConfig] {
	return Spec[testConfig]{
		Name: "svc", EnvPrefix: "T_", Default: []byte("listen: 127.0.0.1:1\ntrust_domains: [dev.local]\n"),
		Env: append(CommonEnv[testConfig](), EnvVar[testConfig]{Name: "LIFETIME", Member: "lifetime"},
			EnvVar[testConfig]{Name: "TWICE", Set: func(c *testConfig, v string) error {
				if v == "" {
					return errors.New("empty")
				}
				c.Issuer = v + v
				return nil
			}}),
		Flags: append(CommonFlags(), Flag{Name: "trust-domains", Member: "trust_domains", Usage: "domains"}),
	}
}

// The layers: embedded default or file (--config over <PREFIX>CONFIG), then the
// environment, then the flags; unknown variables, bad values and stray arguments are
// errors.
func TestLoadLayers(t *testing.T) {
	cfg, src, err := Load(testSpec(), nil, nil, io.Discard)
	if err != nil || !src.Embedded || src.String() != "embedded development default" || cfg.Listen != "127.0.0.1:1" {
		t.Fatalf("default: %v %+v %+v", err, src, cfg)
	}
	dir := t.TempDir()
	file, other := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "o.yaml")
	_ = os.WriteFile(file, []byte("listen: 127.0.0.1:2\nkeys: {alg: EdDSA}\n"), 0o600)
	_ = os.WriteFile(other, []byte("listen: 127.0.0.1:3\n"), 0o600)
	env := []string{"T_CONFIG=" + file, "T_TRUST_DOMAINS=a.example, b.example", "T_REDIS_CLUSTER=true", "T_LIFETIME=5m",
		"T_REDIS_SENTINEL_ADDRS=s1:26379, s2:26379", "T_REDIS_SENTINEL_MASTER_NAME=m",
		"T_PUBLISH_DELAY=1m", "T_TWICE=x", "T_TRACING_OTLP_ENDPOINT=http://c:4318", "OTHER_LISTEN=9"}
	cfg, src, err = Load(testSpec(), nil, env, io.Discard)
	if err != nil || src.Embedded || src.String() != file || cfg.Listen != "127.0.0.1:2" || cfg.Keys.Alg != "EdDSA" ||
		strings.Join(cfg.TrustDomains, ",") != "a.example,b.example" || !cfg.Store.Redis.Cluster ||
		strings.Join(cfg.Store.Redis.Sentinel.Addrs, ",") != "s1:26379,s2:26379" || cfg.Store.Redis.Sentinel.MasterName != "m" || cfg.Lifetime != 5*time.Minute ||
		cfg.Keys.PublishDelay != time.Minute || cfg.Issuer != "xx" || cfg.Tracing.OTLPEndpoint != "http://c:4318" {
		t.Fatalf("env: %v %+v", err, cfg)
	}
	cfg, _, err = Load(testSpec(), []string{"--config", other, "-listen", "127.0.0.1:4", "--redis-addrs", "r1, r2", "--trust-domains", "c.example"}, env, io.Discard)
	if err != nil || cfg.Listen != "127.0.0.1:4" || strings.Join(cfg.Store.Redis.Addrs, ",") != "r1,r2" || strings.Join(cfg.TrustDomains, ",") != "c.example" {
		t.Fatalf("flags: %v %+v", err, cfg)
	}
	for name, c := range map[string]struct {
		args, env []string
		want      string
	}{
		"unknown variable": {env: []string{"T_LISTN=x"}, want: "unknown environment variable T_LISTN"},
		"bad duration":     {env: []string{"T_LIFETIME=long"}, want: "T_LIFETIME: time: invalid duration"},
		"bad bool":         {env: []string{"T_REDIS_CLUSTER=maybe"}, want: "T_REDIS_CLUSTER: "},
		"setter error":     {env: []string{"T_TWICE="}, want: "T_TWICE: empty"},
		"bad tracing":      {env: []string{"T_TRACING_SAMPLE_RATIO=x"}, want: "T_TRACING_SAMPLE_RATIO: "},
		"unknown flag":     {args: []string{"--nope"}, want: "flag provided but not defined"},
		"stray argument":   {args: []string{"x"}, want: `unexpected argument "x"`},
		"strict YAML":      {env: []string{"T_CONFIG=" + testkit.WriteTemp(t, "c.yaml", "listn: x\n")}, want: "unknown field"},
		"missing file":     {args: []string{"--config", filepath.Join(dir, "none.yaml")}, want: "none.yaml"},
	} {
		if _, _, err := Load(testSpec(), c.args, c.env, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// A binding to a member that does not exist, or of a type the loader cannot set, fails
// every load, not only the one that sets it.
func TestLoadRefusesBadBindings(t *testing.T) {
	for _, spec := range []Spec[testConfig]{
		{Name: "svc", Env: []EnvVar[testConfig]{{Name: "X", Member: "keys.nope"}}},
		{Name: "svc", Flags: []Flag{{Name: "x", Member: "count"}}},
		{Name: "svc", Flags: []Flag{{Name: "x", Member: "listen.deeper"}}},
	} {
		spec.Default = []byte("{}\n")
		if _, _, err := Load(spec, nil, nil, io.Discard); err == nil {
			t.Errorf("%+v: accepted", spec)
		}
	}
}
