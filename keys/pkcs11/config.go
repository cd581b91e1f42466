package pkcs11

import (
	"fmt"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Config selects a token and the keys in it.
type Config struct {
	// Module is the path of the PKCS#11 library (SoftHSM2:
	// /usr/lib/softhsm/libsofthsm2.so).
	Module string
	// Slot or TokenLabel selects the token: exactly one of them.
	Slot       *int
	TokenLabel string
	// PIN is the user PIN.
	PIN string
	// Label is the CKA_LABEL of this signer's keys (every generation of a rotated
	// signer carries it), e.g. "dialogtrust-tts".
	Label string
	// Alg of the keys: ES256 (the default), the only one crypto11 supports.
	Alg string
}

// Check validates the configuration without opening anything.
func (c Config) Check() error {
	if c.Module == "" {
		return fmt.Errorf("pkcs11: module (the path of the PKCS#11 library) is required")
	}
	if (c.Slot == nil) == (c.TokenLabel == "") {
		return fmt.Errorf("pkcs11: exactly one of slot and token_label selects the token")
	}
	if c.Slot != nil && *c.Slot < 0 {
		return fmt.Errorf("pkcs11: slot %d is negative", *c.Slot)
	}
	if c.Label == "" || len(c.Label) > maxLabel || strings.ContainsFunc(c.Label, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return fmt.Errorf("pkcs11: the key label must be 1 to %d printable ASCII characters", maxLabel)
	}
	return CheckAlg(c.Alg)
}

// CheckAlg accepts the algorithms a key in a token can have: ES256 ("" is ES256).
// Ed25519 is refused: crypto11 v1.6.2 does not generate or sign with CKM_EDDSA keys,
// although SoftHSM2 2.6 and many HSMs support them.
func CheckAlg(alg string) error {
	switch alg {
	case "", keys.ES256:
		return nil
	case keys.EdDSA, keys.Ed25519:
		return errcode.New(errcode.UnsupportedAlg, "pkcs11: keys in a token are ES256 only: the PKCS#11 library (crypto11 v1.6.2) has no Ed25519")
	}
	return errcode.New(errcode.UnsupportedAlg, "pkcs11: alg %q is not supported (ES256)", errcode.Cut(alg))
}

// maxLabel bounds the key label: it and the CKA_ID fit any token's attribute limits.
const maxLabel = 64

func (c Config) where() string {
	if c.Slot != nil {
		return fmt.Sprintf("slot %d of %s", *c.Slot, c.Module)
	}
	return fmt.Sprintf("token %q of %s", c.TokenLabel, c.Module)
}
