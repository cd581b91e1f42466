package kit

import (
	"context"
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11"
)

// PKCS11KeysConfig is the keys.pkcs11 section: the signing keys live in a PKCS#11
// token (keys/pkcs11), which every replica of the service opens. The token is the
// module's path and exactly one of slot and token_label; the user PIN comes from a file
// or an environment variable (exactly one); label is the CKA_LABEL of the service's
// keys (default "dialogtrust-" and the service's name).
type PKCS11KeysConfig struct {
	Module     string `yaml:"module"`
	Slot       *int   `yaml:"slot"`
	TokenLabel string `yaml:"token_label"`
	PINFile    string `yaml:"pin_file"`
	PINEnv     string `yaml:"pin_env"`
	Label      string `yaml:"label"`
}

// PKCS11Settle is how long the first replica on an empty token waits for replicas
// started with it (keys.NewStoreRotator); a variable for the tests of this package.
var PKCS11Settle = keys.DefaultStoreSettle

// checkPKCS11 validates keys.pkcs11 without opening anything (CheckShared calls it):
// it excludes signing_key_file, data_dir and shared, needs the token, exactly one PIN
// source and an algorithm a token key can have (ES256), and, since replicas share the
// token, a publish delay longer than the rotation step plus the JWKS cache time; and a
// binary built with cgo (checkPKCS11Available).
func (kc KeysConfig) checkPKCS11(step time.Duration) error {
	p := kc.PKCS11
	if p == nil {
		return nil
	}
	if kc.SigningKeyFile != "" || kc.DataDir != "" || kc.Shared != nil {
		return fmt.Errorf("keys.pkcs11 excludes keys.signing_key_file, keys.data_dir and keys.shared")
	}
	if (p.PINFile == "") == (p.PINEnv == "") {
		return fmt.Errorf("keys.pkcs11: exactly one of pin_file and pin_env")
	}
	c := p.config("check", kc.Alg, "")
	if err := c.Check(); err != nil {
		return fmt.Errorf("keys.%w", err)
	}
	if err := checkPKCS11Available(p.Module); err != nil {
		return err
	}
	return kc.checkPublishDelay(step, "keys.pkcs11")
}

func (p PKCS11KeysConfig) config(name, alg, pin string) pkcs11.Config {
	label := p.Label
	if label == "" {
		label = "dialogtrust-" + name
	}
	return pkcs11.Config{Module: p.Module, Slot: p.Slot, TokenLabel: p.TokenLabel, PIN: pin, Label: label, Alg: alg}
}

// OpenPKCS11Keys opens the Rotator of keys.pkcs11: it logs in to the token with the
// PIN (ReadSecret), and rotates the keys labelled for the service (name) in it
// (keys.NewStoreRotator). A module, token or PIN that does not work is refused here,
// at start, with pkcs11_unavailable or pkcs11_login_failed. The returned words say where
// the keys live, for the start log line; close releases the token.
func OpenPKCS11Keys(ctx context.Context, kc KeysConfig, name string, step, retain time.Duration, now func() time.Time) (rot *keys.Rotator, from string, close func(), err error) {
	if err := kc.checkPKCS11(step); err != nil {
		return nil, "", nil, err
	}
	tok, c, err := kc.PKCS11.open("keys.pkcs11", name, kc.Alg)
	if err != nil {
		return nil, "", nil, err
	}
	rc := keys.RotationConfig{Alg: kc.Alg, Period: kc.RotationPeriod, PublishDelay: kc.PublishDelay, Retain: retain, Now: now}
	rot, err = keys.NewStoreRotator(ctx, tok, rc, PKCS11Settle)
	if err != nil {
		_ = tok.Close()
		return nil, "", nil, err
	}
	rot.Ring().SetMaxAge(kc.JWKSMaxAge)
	return rot, fmt.Sprintf("pkcs11 label %q", c.Label), func() { _ = tok.Close() }, nil
}

// open reads the PIN (pin_file or pin_env) and logs in to the token: the one opener of
// a pkcs11 section, for the rotated keys (OpenPKCS11Keys) and a fixed key
// (OpenPKCS11Key). section is where the section is in the configuration, for the
// errors; name gives the default key label.
func (p PKCS11KeysConfig) open(section, name, alg string) (*pkcs11.Token, pkcs11.Config, error) {
	pin, err := ReadSecret(section+".pin", p.PINFile, p.PINEnv)
	if err != nil {
		return nil, pkcs11.Config{}, err
	}
	c := p.config(name, alg, pin)
	tok, err := pkcs11.Open(c)
	if err != nil {
		return nil, c, fmt.Errorf("%s: %w", section, err)
	}
	return tok, c, nil
}
