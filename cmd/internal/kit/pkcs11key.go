package kit

import (
	"fmt"

	"github.com/dialogtrust/dialogtrust/keys"
)

// CheckKey validates a pkcs11 section that names one fixed key (the proxy's assertion
// or handoff key) without opening anything: the token, exactly one PIN source, and a
// key label (default "dialogtrust-" and name). section is where it is in the
// configuration, for the errors. The keys are ES256: a token's keys can be nothing else.
func (p PKCS11KeysConfig) CheckKey(section, name string) error {
	if (p.PINFile == "") == (p.PINEnv == "") {
		return fmt.Errorf("%s: exactly one of pin_file and pin_env", section)
	}
	if err := p.config(name, "", "check").Check(); err != nil {
		return fmt.Errorf("%s: %w", section, err)
	}
	return checkPKCS11Available(p.Module)
}

// OpenPKCS11Key opens the fixed key of a pkcs11 section: it logs in to the token (the
// same opener as keys.pkcs11's) and finds the one key pair labelled label (default
// "dialogtrust-" and name), which the operator created in the token. The private key
// stays in the token: the returned key signs through it. A module, token or PIN that
// does not work is refused with pkcs11_unavailable or pkcs11_login_failed, a label
// that names no key pair (or several) with unknown_key, and a private key that could
// leave the token (extractable, or not sensitive) with invalid_key. close releases the
// token; call it when the key is no longer used.
func OpenPKCS11Key(p PKCS11KeysConfig, section, name string) (key *keys.PrivateKey, close func(), err error) {
	if err := p.CheckKey(section, name); err != nil {
		return nil, nil, err
	}
	tok, _, err := p.open(section, name, "")
	if err != nil {
		return nil, nil, err
	}
	if key, err = tok.Key(); err != nil {
		_ = tok.Close()
		return nil, nil, fmt.Errorf("%s: %w", section, err)
	}
	return key, func() { _ = tok.Close() }, nil
}
