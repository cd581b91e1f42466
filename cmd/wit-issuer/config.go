package main

import (
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/dialogtrust/dialogtrust/internal/cmdutil"
	"github.com/dialogtrust/dialogtrust/internal/tracing"
)

//go:embed default.yaml
var defaultYAML []byte

// Config is the YAML configuration file. Every member is documented in README.md
// ("WIT issuer", "Configuration").
type Config struct {
	Listen       string        `yaml:"listen"`
	Issuer       string        `yaml:"issuer"`
	PublicURL    string        `yaml:"public_url"`
	TrustDomains []string      `yaml:"trust_domains"`
	TLS          TLSConfig     `yaml:"tls"`
	Keys         KeysConfig    `yaml:"keys"`
	Store        StoreConfig   `yaml:"store"`
	Policy       PolicyConfig  `yaml:"policy"`
	Auth         AuthConfig    `yaml:"auth"`
	Routes       []RouteConfig `yaml:"routes"`
	Log          LogConfig     `yaml:"log"`
	// Tracing is OpenTelemetry export over OTLP/HTTP; off unless otlp_endpoint is set.
	Tracing         tracing.Config `yaml:"tracing"`
	ProofWindow     time.Duration  `yaml:"proof_window"`
	Skew            time.Duration  `yaml:"skew"`
	ShutdownTimeout time.Duration  `yaml:"shutdown_timeout"`
	ReloadInterval  time.Duration  `yaml:"reload_interval"`
}

// TLSConfig: the serving certificate. Without it the issuer speaks plain HTTP, which
// only the development default should do.
type TLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// WorkloadAPISocket takes the serving X.509-SVID from the SPIFFE Workload API at this
	// address (unix:///run/spire/sockets/agent.sock), kept current as SPIRE rotates it;
	// it excludes CertFile and KeyFile.
	WorkloadAPISocket string `yaml:"workload_api_socket"`
}

// KeysConfig: where the signing key comes from and how it rotates.
type KeysConfig struct {
	Alg            string        `yaml:"alg"`
	SigningKeyFile string        `yaml:"signing_key_file"`
	DataDir        string        `yaml:"data_dir"`
	RotationPeriod time.Duration `yaml:"rotation_period"`
	PublishDelay   time.Duration `yaml:"publish_delay"`
}

// StoreConfig and RedisConfig are the services' shared store section (cmdutil).
type (
	StoreConfig = cmdutil.StoreConfig
	RedisConfig = cmdutil.RedisConfig
)

// PolicyConfig: see witissuer.Policy.
type PolicyConfig struct {
	AllowedAlgs     []string      `yaml:"allowed_algs"`
	MaxLifetime     time.Duration `yaml:"max_lifetime"`
	DefaultLifetime time.Duration `yaml:"default_lifetime"`
	Rules           []RuleConfig  `yaml:"rules"`
}

// RuleConfig maps identities under FromPrefix to identifiers under ToPrefix.
type RuleConfig struct {
	FromPrefix string `yaml:"from_prefix"`
	ToPrefix   string `yaml:"to_prefix"`
}

// AuthConfig: the authentication methods a route may name. A method left out is off.
type AuthConfig struct {
	X509SVID  *X509SVIDConfig  `yaml:"x509svid"`
	Assertion *AssertionConfig `yaml:"assertion"`
	Dev       *DevConfig       `yaml:"dev"`
}

// X509SVIDConfig: the trust bundles client SVIDs are verified against.
type X509SVIDConfig struct {
	Bundles []BundleConfig `yaml:"bundles"`
}

// BundleConfig: one trust domain's X.509 authorities (PEM).
type BundleConfig struct {
	TrustDomain string `yaml:"trust_domain"`
	File        string `yaml:"file"`
}

// AssertionConfig: registered workloads and their keys.
type AssertionConfig struct {
	MaxLifetime time.Duration    `yaml:"max_lifetime"`
	Workloads   []WorkloadConfig `yaml:"workloads"`
}

// WorkloadConfig: one registered workload; its public JWK inline or in a file.
type WorkloadConfig struct {
	ID      string         `yaml:"id"`
	JWK     map[string]any `yaml:"jwk"`
	JWKFile string         `yaml:"jwk_file"`
}

// DevConfig: development mode's list of workloads.
type DevConfig struct {
	WorkloadsFile    string   `yaml:"workloads_file"`
	Workloads        []string `yaml:"workloads"`
	Prefixes         []string `yaml:"prefixes"`
	AllowNonLoopback bool     `yaml:"allow_non_loopback"`
}

// DevWorkloadsFile is the format of DevConfig.WorkloadsFile.
type DevWorkloadsFile struct {
	Workloads []string `yaml:"workloads"`
	Prefixes  []string `yaml:"prefixes"`
}

// RouteConfig mounts the issuance endpoint at Path with Methods, tried in order.
type RouteConfig struct {
	Path    string   `yaml:"path"`
	Methods []string `yaml:"methods"`
}

// LogConfig: the slog level (debug, info, warn, error).
type LogConfig struct {
	Level string `yaml:"level"`
}

// EnvPrefix starts every environment override.
const EnvPrefix = "DIALOGTRUST_WIT_ISSUER_"

// parseYAML decodes strictly: an unknown member anywhere is an error, so a misspelt
// option cannot be silently ignored.
func parseYAML(b []byte, v any) error {
	return yaml.UnmarshalWithOptions(b, v, yaml.Strict())
}

// source says where the configuration came from, for the start-up log.
type source struct {
	file     string // "" for the embedded default
	embedded bool
}

// loadConfig builds the configuration: the embedded default, or the file named by
// --config or DIALOGTRUST_WIT_ISSUER_CONFIG; then environment overrides; then flags.
// Each later layer wins.
func loadConfig(args []string, env []string, stderr io.Writer) (*Config, source, error) {
	envm := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, EnvPrefix) {
			envm[strings.TrimPrefix(k, EnvPrefix)] = v
		}
	}
	fs := flag.NewFlagSet("wit-issuer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		configFile     = fs.String("config", "", "YAML configuration file (default: the embedded development configuration)")
		listen         = fs.String("listen", "", "listen address host:port")
		issuer         = fs.String("issuer", "", "issuer identifier (aud of requests, iss of WITs)")
		publicURL      = fs.String("public-url", "", "base URL of the issuer for the metadata document")
		dataDir        = fs.String("data-dir", "", "directory for the generated signing keys")
		signingKeyFile = fs.String("signing-key-file", "", "private JWK file of the signing key")
		storeType      = fs.String("store", "", "replay store: memory or redis")
		redisAddrs     = fs.String("redis-addrs", "", "comma-separated Redis addresses")
		logLevel       = fs.String("log-level", "", "debug, info, warn or error")
	)
	if err := fs.Parse(args); err != nil {
		return nil, source{}, err
	}
	if fs.NArg() > 0 {
		return nil, source{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	file := *configFile
	if file == "" {
		file = envm["CONFIG"]
	}
	cfg := &Config{}
	src := source{file: file}
	if file == "" {
		src.embedded = true
		if err := parseYAML(defaultYAML, cfg); err != nil {
			return nil, src, fmt.Errorf("embedded default: %w", err)
		}
	} else {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, src, err
		}
		if err := parseYAML(b, cfg); err != nil {
			return nil, src, fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := applyEnv(cfg, envm); err != nil {
		return nil, src, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, apply := range map[string]func(){
		"listen":           func() { cfg.Listen = *listen },
		"issuer":           func() { cfg.Issuer = *issuer },
		"public-url":       func() { cfg.PublicURL = *publicURL },
		"data-dir":         func() { cfg.Keys.DataDir = *dataDir },
		"signing-key-file": func() { cfg.Keys.SigningKeyFile = *signingKeyFile },
		"store":            func() { cfg.Store.Type = *storeType },
		"redis-addrs":      func() { cfg.Store.Redis.Addrs = splitList(*redisAddrs) },
		"log-level":        func() { cfg.Log.Level = *logLevel },
	} {
		if set[name] {
			apply()
		}
	}
	return cfg, src, nil
}

// applyEnv applies DIALOGTRUST_WIT_ISSUER_* overrides. An unknown name is an error,
// like an unknown YAML member.
func applyEnv(cfg *Config, env map[string]string) error {
	for name, v := range env {
		var err error
		switch name {
		case "CONFIG":
		case "LISTEN":
			cfg.Listen = v
		case "ISSUER":
			cfg.Issuer = v
		case "PUBLIC_URL":
			cfg.PublicURL = v
		case "TRUST_DOMAINS":
			cfg.TrustDomains = splitList(v)
		case "DATA_DIR":
			cfg.Keys.DataDir = v
		case "SIGNING_KEY_FILE":
			cfg.Keys.SigningKeyFile = v
		case "KEY_ALG":
			cfg.Keys.Alg = v
		case "ROTATION_PERIOD":
			cfg.Keys.RotationPeriod, err = time.ParseDuration(v)
		case "PUBLISH_DELAY":
			cfg.Keys.PublishDelay, err = time.ParseDuration(v)
		case "STORE":
			cfg.Store.Type = v
		case "REDIS_ADDRS":
			cfg.Store.Redis.Addrs = splitList(v)
		case "REDIS_CLUSTER":
			cfg.Store.Redis.Cluster, err = strconv.ParseBool(v)
		case "REDIS_PREFIX":
			cfg.Store.Redis.Prefix = v
		case "TLS_CERT_FILE":
			cfg.TLS.CertFile = v
		case "TLS_KEY_FILE":
			cfg.TLS.KeyFile = v
		case "MAX_LIFETIME":
			cfg.Policy.MaxLifetime, err = time.ParseDuration(v)
		case "DEFAULT_LIFETIME":
			cfg.Policy.DefaultLifetime, err = time.ParseDuration(v)
		case "LOG_LEVEL":
			cfg.Log.Level = v
		default:
			var known bool
			if known, err = cfg.Tracing.ApplyEnv(name, v); !known {
				return fmt.Errorf("unknown environment variable %s%s", EnvPrefix, name)
			}
		}
		if err != nil {
			return fmt.Errorf("%s%s: %w", EnvPrefix, name, err)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
