//go:build cgo

package softhsmtest

import (
	"crypto/elliptic"
	"testing"

	"github.com/ThalesGroup/crypto11"
	"github.com/dialogtrust/dialogtrust/keys"
)

// GenerateKey creates an ES256 key pair labelled label in the token labelled token,
// as an operator creates a service's fixed key (the proxy's assertion or handoff key)
// with the token's own tools, and returns its public half. The private half is
// sensitive and not extractable, unless leaky: then it is neither, a key that can
// leave the token (which the services must refuse). The session is closed before
// GenerateKey returns.
func (e *Env) GenerateKey(t *testing.T, token, label string, leaky bool) *keys.PublicKey {
	t.Helper()
	ctx, err := crypto11.Configure(&crypto11.Config{Path: e.Module, TokenLabel: token, Pin: PIN})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ctx.Close() }()
	pub, err := crypto11.NewAttributeSetWithIDAndLabel([]byte("operator-"+label), []byte(label))
	if err != nil {
		t.Fatal(err)
	}
	priv := pub.Copy()
	for typ, v := range map[crypto11.AttributeType]bool{crypto11.CkaSensitive: !leaky, crypto11.CkaExtractable: leaky, crypto11.CkaPrivate: true, crypto11.CkaToken: true} {
		if err := priv.Set(typ, v); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ctx.GenerateECDSAKeyPairWithAttributes(pub, priv, elliptic.P256())
	if err != nil {
		t.Fatal(err)
	}
	k, err := keys.NewExternalKey(s, keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	return k.Public()
}
