package kit

import (
	"errors"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11"
)

// checkPKCS11Available refuses a pkcs11 section (keys.pkcs11, and the proxy's
// workload.pkcs11 and handoff.pkcs11) in a binary built without cgo (the static images
// of deploy/docker), which could never load the module. checkPKCS11 and CheckKey call
// it, so that -check-config refuses what the start would (pkcs11_unavailable), and an
// operator learns before the rollout that the image must be the hsm variant (issue 27).
func checkPKCS11Available(module string) error {
	if pkcs11.Available {
		return nil
	}
	return errcode.Unavailable(errcode.PKCS11Unavailable, errors.New("built without cgo"),
		"pkcs11: this binary was built without cgo (CGO_ENABLED=0) and cannot load %s; run the hsm image (deploy/docker, --target hsm) or build with CGO_ENABLED=1", module)
}
