//go:build cgo

package pkcs11_test

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11/softhsmtest"
)

// A fixed key (the proxy's, Token.Key) is the one key pair under its label, and its
// private half must not be able to leave the token (issue 27): a key the operator
// created extractable and not sensitive is refused with invalid_key, a label with no
// key pair with unknown_key; the control, a sensitive key, signs in the token and
// verifies with the public half the operator exported.
func TestFixedKeyMustStayInToken(t *testing.T) {
	env := softhsmtest.Setup(t, "fixed")
	pub := env.GenerateKey(t, "fixed", "dt-handoff", false)
	env.GenerateKey(t, "fixed", "dt-leaky", true)
	for label, code := range map[string]errcode.Code{"dt-leaky": errcode.InvalidKey, "dt-absent": errcode.UnknownKey} {
		if _, err := open(t, env.Config("fixed", label)).Key(); !errcode.Is(err, code) {
			t.Errorf("label %s: got %v, want %s", label, err, code)
		}
	}
	k, err := open(t, env.Config("fixed", "dt-handoff")).Key()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := k.Sign([]byte("offer"))
	if err != nil || !k.External() || k.KID() != pub.KID() || !pub.Verify([]byte("offer"), sig) {
		t.Fatalf("the token key's signature does not verify with the exported public key (kid %s, want %s): %v", k.KID(), pub.KID(), err)
	}
}
