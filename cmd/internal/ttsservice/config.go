package ttsservice

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// Config is the YAML configuration file. Every member is documented in docs/operator.md
// ("TTS configuration").
type Config struct {
	// Development marks a development configuration: a generated signing key is
	// allowed, the listener must be loopback, and the start says so loudly.
	Development bool `yaml:"development"`
	// Base: listen, issuer, trust_domains, log, tracing, skew, shutdown_timeout.
	kit.Base      `yaml:",inline"`
	TLS           TLSConfig           `yaml:"tls"`
	Keys          KeysConfig          `yaml:"keys"`
	Store         kit.StoreConfig     `yaml:"store"`
	WITs          []WITTrustConfig    `yaml:"wits"`
	WITIssuers    []string            `yaml:"wit_issuers"`
	Auth          AuthConfig          `yaml:"auth"`
	SubjectTokens SubjectTokensConfig `yaml:"subject_tokens"`
	Policy        PolicyConfig        `yaml:"policy"`
	// Chaining, when set, serves identity chaining at the token endpoint (package
	// chaining): grants for peer domains (as_a) and their redemption (as_b).
	Chaining *ChainingConfig `yaml:"chaining"`
	// AuthZEN, when set, is a policy decision point asked after the policy allowed an
	// issuance: nothing is issued when it refuses or cannot be asked (issue 25).
	AuthZEN *kit.AuthZENConfig `yaml:"authzen"`
	// Revocations, when set, refuses tokens in what an operator revoked and serves
	// the admin API (issue 26, revocations.go).
	Revocations *RevocationsConfig `yaml:"revocations"`
	// Audit, when set, writes one record per issuance and refusal, chained and
	// checkpointed (issue 26); an issuance it cannot record is refused.
	Audit *kit.AuditConfig `yaml:"audit"`
	// JWKSRetry bounds how often a JWKS URL that has not answered yet is tried again
	// (default 5s).
	JWKSRetry time.Duration `yaml:"jwks_retry"`

	file string // the file it was read from, for the policy's errors
	// opened is what build opened that buildHandler wires (revocations.go).
	opened *opened
}

// SetSource keeps the file the configuration was read from (kit.SourceSetter), so
// that a policy condition that does not compile is named by file and line.
func (c *Config) SetSource(s kit.Source) {
	c.file = s.File
	if s.Embedded {
		c.file = "embedded default"
	}
}

// TLSConfig: the serving certificate. Without it the TTS speaks plain HTTP, which only
// a development configuration should do (oauth.md 1.9 item 2).
type TLSConfig = kit.CertFiles

// KeysConfig: where the signing key comes from and how it rotates (step_interval among
// the shared members, as at the wit-issuer).
type KeysConfig struct {
	kit.KeysConfig `yaml:",inline"`
}

// WITTrustConfig: the keys of one trust domain's WIT issuer, by JWKS URL (fetched
// lazily, cached, refreshed on an unknown kid) or file.
type WITTrustConfig struct {
	TrustDomain string `yaml:"trust_domain"`
	kit.JWKS    `yaml:",inline"`
}

// AuthConfig: the client authentication methods, in the order they are tried.
type AuthConfig struct {
	Methods     []string           `yaml:"methods"`
	X509Bundles []kit.BundleConfig `yaml:"x509_bundles"`
	Clients     []ClientConfig     `yaml:"clients"`
}

// ClientConfig: a workload registered for private_key_jwt, with its keys.
type ClientConfig struct {
	ID       string `yaml:"id"`
	kit.JWKS `yaml:",inline"`
}

// SubjectTokensConfig: the subject token types accepted.
type SubjectTokensConfig struct {
	SelfSigned   *PrefixedConfig   `yaml:"self_signed"`
	UnsignedJSON *PrefixedConfig   `yaml:"unsigned_json"`
	JWTIssuers   []JWTIssuerConfig `yaml:"jwt_issuers"`
}

// PrefixedConfig: a handler that can be switched on, with a sub prefix.
type PrefixedConfig struct {
	Enabled       bool   `yaml:"enabled"`
	SubjectPrefix string `yaml:"subject_prefix"`
}

// JWTIssuerConfig: an issuer of JWT access tokens or ID tokens.
type JWTIssuerConfig struct {
	Issuer        string `yaml:"issuer"`
	kit.JWKS      `yaml:",inline"`
	Types         []string `yaml:"types"`
	Typ           string   `yaml:"typ"`
	Audiences     []string `yaml:"audiences"`
	SubjectPrefix string   `yaml:"subject_prefix"`
	Scope         []string `yaml:"scope"`
	// RSA, when present, admits RSA keys (RS256, PS256; 2048 to 8192 bits) in this
	// issuer's JWKS and RS256/PS256 tokens from it; identity providers sign with RSA.
	RSA *RSAConfig `yaml:"rsa"`
	// AllowUntyped accepts tokens without a typ header (ID tokens of some identity
	// providers); it needs audiences.
	AllowUntyped bool `yaml:"allow_untyped"`
}

// RSAConfig: DefaultAlg pins the RSA keys that name no alg (RS256 or PS256; none: such
// keys are refused).
type RSAConfig struct {
	DefaultAlg string `yaml:"default_alg"`
}

// PolicyConfig: see tts.Policy.
type PolicyConfig struct {
	Lifetime              time.Duration `yaml:"lifetime"`
	BeyondSubjectExpiry   bool          `yaml:"beyond_subject_expiry"`
	MaxLifetimeExtensions int           `yaml:"max_lifetime_extensions"`
	MaxCallChain          int           `yaml:"max_call_chain"`
	Rules                 []RuleConfig  `yaml:"rules"`
}

// RuleConfig: see tts.Rule. Subject token types may be short names (self_signed) or
// URNs.
type RuleConfig struct {
	Workload          string   `yaml:"workload"`
	Audiences         []string `yaml:"audiences"`
	SubjectTokenTypes []string `yaml:"subject_token_types"`
	Scopes            []string `yaml:"scopes"`
	SubjectScopes     []string `yaml:"subject_scopes"`
	Details           []string `yaml:"details"`
	Context           []string `yaml:"context"`
	// Name names the rule in the decision log (default: workload).
	Name string `yaml:"name"`
	// When, GrantScopes and Tctx are CEL (docs/tts.md, "Conditions").
	When        kit.Expr            `yaml:"when"`
	GrantScopes kit.Expr            `yaml:"grant_scopes"`
	Tctx        map[string]kit.Expr `yaml:"tctx"`
}

// ChainingConfig: identity chaining across trust domains (docs/chaining.md; every
// option in docs/operator.md, "Identity chaining configuration"). peers names the other
// domains' authorization servers once; as_a and as_b say what this AS does with each, in
// each direction.
type ChainingConfig struct {
	Peers []ChainPeerConfig `yaml:"peers"`
	ASA   *ASAConfig        `yaml:"as_a"`
	ASB   *ASBConfig        `yaml:"as_b"`
}

// ChainPeerConfig: a peer authorization server (usually another domain's TTS binary).
// Its keys (one of jwks_url, jwks_file, metadata) are needed when as_b redeems its
// grants.
type ChainPeerConfig struct {
	Issuer        string   `yaml:"issuer"`
	TokenEndpoint string   `yaml:"token_endpoint"`
	Audiences     []string `yaml:"audiences"`
	kit.JWKS      `yaml:",inline"`
	// Metadata: find jwks_uri in the peer's RFC 8414 metadata at its issuer.
	Metadata bool     `yaml:"metadata"`
	Typs     []string `yaml:"typs"`
	Algs     []string `yaml:"algs"`
	// RSA, when present, admits RSA keys (RS256, PS256; 2048 to 8192 bits) in this
	// peer's keys and RS256/PS256 grants from it (as_b), as for subject-token issuers.
	RSA *RSAConfig `yaml:"rsa"`
}

// ASAConfig: grants this AS issues (AS A).
type ASAConfig struct {
	GrantLifetime time.Duration   `yaml:"grant_lifetime"`
	Peers         []ASAPeerConfig `yaml:"peers"`
	// IDTokenIssuers are the identity providers whose ID tokens may be the subject of
	// an ID-JAG request (docs/tts.md, "ID-JAG").
	IDTokenIssuers []IDTokenIssuerConfig `yaml:"id_token_issuers"`
}

// ASAPeerConfig: what may cross to one peer.
type ASAPeerConfig struct {
	Issuer    string        `yaml:"issuer"`
	Scopes    []string      `yaml:"scopes"`
	Subject   SubjectConfig `yaml:"subject"`
	Workloads []string      `yaml:"workloads"`
	// When and GrantScopes are CEL (docs/chaining.md, "Conditions").
	When        kit.Expr `yaml:"when"`
	GrantScopes kit.Expr `yaml:"grant_scopes"`
	// IDJAG: ID-JAGs (requested_token_type ...:id-jag) may be issued for this peer.
	IDJAG bool `yaml:"id_jag"`
	// Resources: protected resources of the peer's domain a grant request or an ID-JAG
	// request may name (chaining.GrantPeer.Resources).
	Resources []string `yaml:"resources"`
}

// IDTokenIssuerConfig: an identity provider whose ID tokens AS A takes as the subject
// of an ID-JAG request (chaining.IDTokenIssuer).
type IDTokenIssuerConfig struct {
	Issuer   string `yaml:"issuer"`
	kit.JWKS `yaml:",inline"`
	Algs     []string `yaml:"algs"`
	// RSA, when present, admits RSA keys and RS256/PS256 ID tokens.
	RSA *RSAConfig `yaml:"rsa"`
	// ClientIDs maps the client_id the provider knows a workload by (an ID token's aud)
	// to the workload's identifier.
	ClientIDs map[string]string `yaml:"client_ids"`
}

// ASBConfig: grants this AS redeems (AS B) and the access tokens it issues.
type ASBConfig struct {
	// Audience of the access tokens (default: the first trust domain).
	Audience string `yaml:"audience"`
	// Resources are further RFC 8707 resources access tokens may be issued for: the
	// resource claim of an ID-JAG, or the request's resource parameter, names them.
	Resources           []string        `yaml:"resources"`
	AccessTokenLifetime time.Duration   `yaml:"access_token_lifetime"`
	MaxGrantAge         time.Duration   `yaml:"max_grant_age"`
	Peers               []ASBPeerConfig `yaml:"peers"`
}

// ASBPeerConfig: what may come in from one peer.
type ASBPeerConfig struct {
	Issuer       string        `yaml:"issuer"`
	Scopes       []string      `yaml:"scopes"`
	Subject      SubjectConfig `yaml:"subject"`
	Clients      []string      `yaml:"clients"`
	AllowUnbound bool          `yaml:"allow_unbound"`
	// AllowUntyped accepts grants without a typ header; it needs audiences.
	AllowUntyped bool `yaml:"allow_untyped"`
	// Audiences, when set, are the aud values the peer's grants must name, in place of
	// this AS's issuer identifier and token endpoint.
	Audiences []string `yaml:"audiences"`
	// When and GrantScopes are CEL (docs/chaining.md, "Conditions").
	When        kit.Expr `yaml:"when"`
	GrantScopes kit.Expr `yaml:"grant_scopes"`
	// IDJAG accepts the peer's ID-JAGs (typ oauth-id-jag+jwt) besides its grants of the
	// peer's typs: the same as naming oauth-id-jag+jwt in chaining.peers[].typs.
	IDJAG bool `yaml:"id_jag"`
}

// SubjectConfig: see chaining.SubjectMap (mode keep, prefix or table).
type SubjectConfig struct {
	Mode   string            `yaml:"mode"`
	Prefix string            `yaml:"prefix"`
	Table  map[string]string `yaml:"table"`
}

// EnvPrefix starts every environment override.
const EnvPrefix = "DIALOGTRUST_TTS_"

// defaultYAML is the embedded development configuration.
//
//go:embed default.yaml
var defaultYAML []byte

// configSpec is how the configuration is read (kit.Load): the embedded default,
// or the file named by --config or DIALOGTRUST_TTS_CONFIG; then the environment
// overrides of this table (an unknown name is an error, like an unknown YAML member);
// then the flags. Each later layer wins.
var configSpec = kit.ServiceSpec("tts", EnvPrefix, defaultYAML,
	append([]kit.EnvVar[Config]{
		{Name: "LIFETIME", Member: "policy.lifetime"},
		// The development default's one WIT issuer, elsewhere.
		{Name: "WIT_JWKS_URL", Set: func(cfg *Config, v string) error {
			if len(cfg.WITs) != 1 {
				return fmt.Errorf("needs exactly one wits entry, the configuration has %d", len(cfg.WITs))
			}
			cfg.WITs[0].JWKS = kit.JWKS{URL: v}
			return nil
		}},
	}, append(kit.SharedKeysEnv(func(cfg *Config) *kit.KeysConfig { return &cfg.Keys.KeysConfig }),
		kit.RedisEnv("", func(cfg *Config) (*kit.StoreConfig, error) { return &cfg.Store, nil })...)...),
	kit.Flag{Name: "issuer", Member: "issuer", Usage: "issuer identifier (iss of Txn-Tokens; default http(s)://<listen>)"},
	kit.Flag{Name: "trust-domains", Member: "trust_domains", Usage: "comma-separated trust domains served"},
	kit.Flag{Name: "data-dir", Member: "keys.data_dir", Usage: "directory for the signing keys (rotated)"})
