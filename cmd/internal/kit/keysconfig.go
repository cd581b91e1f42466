package kit

import (
	"fmt"
	"time"
)

// KeysConfig is the keys section both services share: where the signing key comes from
// and how it rotates (keys.OpenRotator). A binary with more keys options inlines it.
type KeysConfig struct {
	Alg            string        `yaml:"alg"`
	SigningKeyFile string        `yaml:"signing_key_file"`
	DataDir        string        `yaml:"data_dir"`
	RotationPeriod time.Duration `yaml:"rotation_period"`
	PublishDelay   time.Duration `yaml:"publish_delay"`
	// JWKSMaxAge is how long verifiers may cache the JWKS (its Cache-Control max-age,
	// keys.Ring.SetMaxAge; default keys.DefaultJWKSMaxAge). With Shared, PublishDelay
	// must exceed it plus the rotation step.
	JWKSMaxAge time.Duration `yaml:"jwks_max_age"`
	// StepInterval is how often the rotation schedule is checked, and with Shared the
	// ring reloaded (default RotationStepInterval). Only tests with seconds-scale
	// rotation periods need it shorter (internal/faulttest).
	StepInterval time.Duration `yaml:"step_interval"`
	// Shared keeps the rotated keys in the store's Redis, one ring for every replica
	// (OpenSharedKeys); it excludes SigningKeyFile and DataDir.
	Shared *SharedKeysConfig `yaml:"shared"`
	// PKCS11 keeps the rotated keys in a PKCS#11 token that every replica opens
	// (OpenPKCS11Keys); it excludes SigningKeyFile, DataDir and Shared.
	PKCS11 *PKCS11KeysConfig `yaml:"pkcs11"`
}

// RotationStep is StepInterval or its default, RotationStepInterval.
func (kc KeysConfig) RotationStep() time.Duration {
	if kc.StepInterval > 0 {
		return kc.StepInterval
	}
	return RotationStepInterval
}

// SharedKeysConfig is the keys.shared section: the secret the shared key ring is
// encrypted under in Redis, from a file or an environment variable (one of them).
type SharedKeysConfig struct {
	SecretFile string `yaml:"secret_file"`
	SecretEnv  string `yaml:"secret_env"`
}

// CertFiles is the serving certificate as files, the part of the tls section both
// services share. Without it a service speaks plain HTTP.
type CertFiles struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Check makes sure the certificate and its key are configured together.
func (c CertFiles) Check() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("tls: cert_file and key_file go together")
	}
	return nil
}

// BundleConfig is one trust domain's X.509 authorities (PEM): the TTS's for
// tls_client_auth, the WIT issuer's for x509svid.
type BundleConfig struct {
	TrustDomain string `yaml:"trust_domain"`
	File        string `yaml:"file"`
}
