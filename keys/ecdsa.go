package keys

import (
	"crypto"
	"crypto/ecdsa"
	"encoding/asn1"
	"math/big"
)

// ecdsaSignDeterministic returns the RFC 6979 signature (r, s) of hash. crypto/ecdsa
// produces it when the random source is nil; it returns ASN.1, which is unpacked here.
func ecdsaSignDeterministic(k *ecdsa.PrivateKey, hash []byte) (*big.Int, *big.Int, error) {
	der, err := k.Sign(nil, hash, crypto.SHA256)
	if err != nil {
		return nil, nil, err
	}
	var sig struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &sig); err != nil {
		return nil, nil, err
	}
	return sig.R, sig.S, nil
}
