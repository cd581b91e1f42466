package witissuerservice

import (
	_ "embed"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// Config is the YAML configuration file. Every member is documented in docs/operator.md
// ("WIT issuer configuration").
type Config struct {
	// Base: listen, issuer, trust_domains, log, tracing, skew, shutdown_timeout.
	kit.Base       `yaml:",inline"`
	PublicURL      string          `yaml:"public_url"`
	TLS            TLSConfig       `yaml:"tls"`
	Keys           kit.KeysConfig  `yaml:"keys"`
	Store          kit.StoreConfig `yaml:"store"`
	Policy         PolicyConfig    `yaml:"policy"`
	Auth           AuthConfig      `yaml:"auth"`
	Routes         []RouteConfig   `yaml:"routes"`
	ProofWindow    time.Duration   `yaml:"proof_window"`
	ReloadInterval time.Duration   `yaml:"reload_interval"`
}

// TLSConfig: the serving certificate. Without it the issuer speaks plain HTTP, which
// only the development default should do.
type TLSConfig struct {
	kit.CertFiles `yaml:",inline"`
	// WorkloadAPISocket takes the serving X.509-SVID from the SPIFFE Workload API at this
	// address (unix:///run/spire/sockets/agent.sock), kept current as SPIRE rotates it;
	// it excludes CertFile and KeyFile.
	WorkloadAPISocket string `yaml:"workload_api_socket"`
}

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
	Bundles []kit.BundleConfig `yaml:"bundles"`
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

// EnvPrefix starts every environment override.
const EnvPrefix = "DIALOGTRUST_WIT_ISSUER_"

// defaultYAML is the embedded development configuration.
//
//go:embed default.yaml
var defaultYAML []byte

// configSpec is how the configuration is read (kit.Load): the embedded default,
// or the file named by --config or DIALOGTRUST_WIT_ISSUER_CONFIG; then the environment
// overrides of this table (an unknown name is an error, like an unknown YAML member);
// then the flags. Each later layer wins.
var configSpec = kit.ServiceSpec("wit-issuer", EnvPrefix, defaultYAML,
	append([]kit.EnvVar[Config]{
		{Name: "PUBLIC_URL", Member: "public_url"},
		{Name: "MAX_LIFETIME", Member: "policy.max_lifetime"},
		{Name: "DEFAULT_LIFETIME", Member: "policy.default_lifetime"},
	}, append(kit.SharedKeysEnv(func(cfg *Config) *kit.KeysConfig { return &cfg.Keys }),
		kit.RedisEnv("", func(cfg *Config) (*kit.StoreConfig, error) { return &cfg.Store, nil })...)...),
	kit.Flag{Name: "issuer", Member: "issuer", Usage: "issuer identifier (aud of requests, iss of WITs)"},
	kit.Flag{Name: "public-url", Member: "public_url", Usage: "base URL of the issuer for the metadata document"},
	kit.Flag{Name: "data-dir", Member: "keys.data_dir", Usage: "directory for the generated signing keys"})
