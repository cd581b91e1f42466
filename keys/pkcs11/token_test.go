//go:build cgo

package pkcs11_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThalesGroup/crypto11"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11/softhsmtest"
	"github.com/dialogtrust/dialogtrust/keys/ringtest"
)

func open(t *testing.T, c pkcs11.Config) *pkcs11.Token {
	t.Helper()
	tok, err := pkcs11.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tok.Close() })
	return tok
}

// The store Rotator's contract (keys/ringtest.RunStore) on a real SoftHSM2 token:
// three replicas, each with its own session pool on the one token, rotate under load
// and no token fails verification at any replica's JWKS; concurrent rotations agree
// before signing; replaced keys are destroyed in the token (issue 27).
func TestTokenRingContract(t *testing.T) {
	env := softhsmtest.Setup(t, "ring")
	var n atomic.Int64
	ringtest.RunStore(t, func(t *testing.T) keys.KeyStore {
		// A fresh key label per subtest is a fresh, empty store on the same token.
		return open(t, env.Config("ring", fmt.Sprintf("dt-ring-%d", n.Add(1))))
	})
}

// The private key never leaves the token (issue 27): generated sensitive, never
// extractable, private; its value cannot be read; the JWKS has the public half only;
// and nothing is written outside SoftHSM2's token directory.
func TestKeyNeverLeavesTheToken(t *testing.T) {
	env := softhsmtest.Setup(t, "keep")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	tok := open(t, env.Config("keep", "dt-keep"))
	rot, err := keys.NewStoreRotator(context.Background(), tok, keys.RotationConfig{Retain: time.Hour}, ringtest.StoreSettle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rot.Rotate(); err != nil {
		t.Fatal(err)
	}
	stored, err := tok.Keys(context.Background())
	if err != nil || len(stored) != 2 {
		t.Fatalf("%d keys in the token, %v", len(stored), err)
	}
	// A second context on the token reads the attributes, as another program would.
	c11, err := crypto11.Configure(&crypto11.Config{Path: env.Module, TokenLabel: "keep", Pin: softhsmtest.PIN})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c11.Close() }()
	signers, err := c11.FindKeyPairs(nil, []byte("dt-keep"))
	if err != nil || len(signers) != 2 {
		t.Fatalf("%d key pairs, %v", len(signers), err)
	}
	for _, s := range signers {
		attrs, err := c11.GetAttributes(s, []crypto11.AttributeType{crypto11.CkaSensitive, crypto11.CkaExtractable, crypto11.CkaNeverExtractable, crypto11.CkaPrivate, crypto11.CkaToken})
		if err != nil {
			t.Fatal(err)
		}
		for typ, want := range map[crypto11.AttributeType]byte{crypto11.CkaSensitive: 1, crypto11.CkaExtractable: 0, crypto11.CkaNeverExtractable: 1, crypto11.CkaPrivate: 1, crypto11.CkaToken: 1} {
			if a := attrs[typ]; a == nil || len(a.Value) != 1 || a.Value[0] != want {
				t.Errorf("attribute %#x of a private key: %v, want %d", typ, a, want)
			}
		}
		if v, err := c11.GetAttribute(s, crypto11.CkaValue); err == nil && v != nil && len(v.Value) > 0 {
			t.Errorf("the private value was read out of the token: %d octets", len(v.Value))
		}
	}
	doc, err := rot.Ring().JWKS()
	if err != nil {
		t.Fatal(err)
	}
	set, err := keys.ParseJWKS(doc)
	if err != nil || len(set.Keys()) != 2 {
		t.Fatalf("JWKS %s: %v", doc, err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("files written outside the token: %v", ents)
	}
}

// Issue, verify through the JWKS: a signature made in the token verifies with the key
// the JWKS publishes under the signing kid, and the same key is found again after the
// token is reopened (it lives in the token, not in the process).
func TestSignVerifyThroughJWKS(t *testing.T) {
	env := softhsmtest.Setup(t, "sign")
	cfg := env.Config("sign", "dt-sign")
	tok, err := pkcs11.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rot, err := keys.NewStoreRotator(context.Background(), tok, keys.RotationConfig{Retain: time.Hour}, ringtest.StoreSettle)
	if err != nil {
		t.Fatal(err)
	}
	k := rot.Ring().Active()
	if !k.External() {
		t.Fatal("the active key is not the token's")
	}
	sig, err := k.Sign([]byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := rot.Ring().JWKS()
	set, err := keys.ParseJWKS(doc)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := set.LookupKey(context.Background(), k.KID())
	if err != nil || !pub.Verify([]byte("payload"), sig) {
		t.Fatalf("the token's signature does not verify through the JWKS: %v", err)
	}
	_ = tok.Close()
	tok2 := open(t, cfg)
	rot2, err := keys.NewStoreRotator(context.Background(), tok2, keys.RotationConfig{Retain: time.Hour}, ringtest.StoreSettle)
	if err != nil {
		t.Fatal(err)
	}
	if rot2.Ring().Active().KID() != k.KID() {
		t.Fatalf("after reopening, key %s signs, want %s", rot2.Ring().Active().KID(), k.KID())
	}
}

// A wrong PIN, a missing token, a missing module and EdDSA are refused at Open with
// stable codes (issue 27).
func TestOpenRefusals(t *testing.T) {
	env := softhsmtest.Setup(t, "pin")
	slot := 99
	for _, tc := range []struct {
		name string
		c    pkcs11.Config
		code errcode.Code
	}{
		{"WrongPIN", pkcs11.Config{Module: env.Module, TokenLabel: "pin", PIN: "not-the-pin", Label: "dt"}, errcode.PKCS11LoginFailed},
		{"MissingTokenLabel", pkcs11.Config{Module: env.Module, TokenLabel: "absent", PIN: softhsmtest.PIN, Label: "dt"}, errcode.PKCS11Unavailable},
		{"MissingSlot", pkcs11.Config{Module: env.Module, Slot: &slot, PIN: softhsmtest.PIN, Label: "dt"}, errcode.PKCS11Unavailable},
		{"MissingModule", pkcs11.Config{Module: filepath.Join(t.TempDir(), "nope.so"), TokenLabel: "pin", PIN: softhsmtest.PIN, Label: "dt"}, errcode.PKCS11Unavailable},
		{"EdDSA", pkcs11.Config{Module: env.Module, TokenLabel: "pin", PIN: softhsmtest.PIN, Label: "dt", Alg: keys.EdDSA}, errcode.UnsupportedAlg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := pkcs11.Open(tc.c)
			if err == nil {
				_ = tok.Close()
				t.Fatal("opened")
			}
			if !errcode.Is(err, tc.code) {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			t.Log(err)
		})
	}
	// The control: the right PIN opens the same token.
	open(t, env.Config("pin", "dt"))
}

// A key under the service's label that the service did not create is an error, not a
// generation (the operator's key is neither used nor destroyed).
func TestForeignKeyUnderLabelRefused(t *testing.T) {
	env := softhsmtest.Setup(t, "foreign")
	tok := open(t, env.Config("foreign", "dt-foreign"))
	c11, err := crypto11.Configure(&crypto11.Config{Path: env.Module, TokenLabel: "foreign", Pin: softhsmtest.PIN})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c11.Close() }()
	if _, err := c11.GenerateECDSAKeyPairWithLabel([]byte("operator"), []byte("dt-foreign"), ellipticP256()); err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Keys(context.Background()); err == nil {
		t.Fatal("a foreign key under the label was taken")
	}
	// A fixed key by label (the proxy's) is found.
	fixed := open(t, env.Config("foreign", "dt-foreign"))
	k, err := fixed.Key()
	if err != nil || !k.External() {
		t.Fatalf("fixed key: %v", err)
	}
}
