//go:build !cgo

package pkcs11_test

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11"
)

// Built without cgo (the images of deploy/), a configured token is refused at Open
// with pkcs11_unavailable: never a silent fallback to keys in memory (issue 27).
func TestOpenWithoutCgoRefused(t *testing.T) {
	_, err := pkcs11.Open(pkcs11.Config{Module: "/usr/lib/softhsm/libsofthsm2.so", TokenLabel: "t", PIN: "1", Label: "dt"})
	if !errcode.Is(err, errcode.PKCS11Unavailable) || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
}
