//go:build !cgo

package softhsmtest

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
)

// GenerateKey needs cgo, as the token does; Setup has skipped (or failed) already.
func (e *Env) GenerateKey(t *testing.T, token, label string, leaky bool) *keys.PublicKey {
	t.Helper()
	t.Fatal("softhsmtest: built without cgo")
	return nil
}
