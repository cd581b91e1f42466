//go:build !cgo

package pkcs11

import (
	"context"
	"errors"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Token is a logged-in PKCS#11 token; without cgo none can be opened.
type Token struct{}

// Available reports whether this binary can open a token (it was built with cgo).
const Available = false

var errNoCgo = errors.New("built without cgo")

// Open refuses: the PKCS#11 library needs cgo, and this binary was built without it
// (CGO_ENABLED=0). It never falls back to keys in memory.
func Open(c Config) (*Token, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return nil, errcode.Unavailable(errcode.PKCS11Unavailable, errNoCgo,
		"pkcs11: this binary was built without cgo (CGO_ENABLED=0) and cannot load %s; build it with CGO_ENABLED=1", c.Module)
}

// Close implements io.Closer.
func (*Token) Close() error { return nil }

// Keys implements keys.KeyStore.
func (*Token) Keys(context.Context) ([]keys.StoredKey, error) { return nil, errNoCgo }

// Create implements keys.KeyStore.
func (*Token) Create(context.Context, string, uint64, time.Time) (keys.StoredKey, error) {
	return keys.StoredKey{}, errNoCgo
}

// Destroy implements keys.KeyStore.
func (*Token) Destroy(context.Context, keys.StoredKey) error { return errNoCgo }

// Key returns the key labelled c.Label.
func (*Token) Key() (*keys.PrivateKey, error) { return nil, errNoCgo }
