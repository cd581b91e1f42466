//go:build cgo

package pkcs11_test

import "crypto/elliptic"

func ellipticP256() elliptic.Curve { return elliptic.P256() }
