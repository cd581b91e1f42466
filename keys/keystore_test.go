package keys_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/keys/ringtest"
)

// The store Rotator (issue 27: keys in a PKCS#11 token, publish-before-use across
// replicas without a compare-and-swap) passes the rotation contract on the memory store.
func TestStoreRotatorContract(t *testing.T) {
	ringtest.RunStore(t, func(*testing.T) keys.KeyStore { return &keys.MemoryKeyStore{} })
}

// A key held outside the process signs in JWS form and verifies; it has no private
// JWK, so no key state that holds it can be written (issue 27: the private key never
// leaves the token).
func TestExternalKeyNeverMarshalled(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := keys.NewExternalKey(ec, keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := k.Sign([]byte("msg"))
	if err != nil || !k.Public().Verify([]byte("msg"), sig) {
		t.Fatalf("sign: %v", err)
	}
	if _, err := json.Marshal(k); err == nil {
		t.Fatal("a private JWK was written for an external key")
	}
	if _, err := json.Marshal(keys.RingState{Keys: []keys.KeyRecord{{Key: k, State: keys.KeyActive}}}); err == nil {
		t.Fatal("a key state holding an external key was written")
	}
	if _, err := keys.NewExternalKey(ec, keys.EdDSA); !errcode.Is(err, errcode.UnsupportedAlg) {
		t.Fatalf("EdDSA over an EC signer: %v", err)
	}
}

// badSigner answers with a signature of another key.
type badSigner struct{ pub, other *ecdsa.PrivateKey }

func (b badSigner) Public() crypto.PublicKey { return &b.pub.PublicKey }
func (b badSigner) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	return b.other.Sign(r, d, o)
}

// A token that returns a signature its public key does not verify issues nothing.
func TestExternalKeyChecksTheSignature(t *testing.T) {
	a, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k, err := keys.NewExternalKey(badSigner{a, b}, keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Sign([]byte("msg")); !errcode.Is(err, errcode.InvalidSignature) {
		t.Fatalf("a wrong signature from the signer: %v", err)
	}
}
