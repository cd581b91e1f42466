package tokenhash

import (
	"crypto/sha256"
	"encoding/base64"
	"unsafe"
)

// Of returns base64url(SHA-256(token)) without padding: 43 characters. token is a
// string (a token as carried in a field) or its octets; both give the same result.
func Of[T string | []byte](token T) string {
	var h [32]byte
	switch t := any(token).(type) {
	case string:
		// The string's bytes viewed without a copy (only read): two hashes of a token
		// of a kilobyte run on every issuance, and []byte(t) would copy it each time.
		h = sha256.Sum256(unsafe.Slice(unsafe.StringData(t), len(t)))
	case []byte:
		h = sha256.Sum256(t)
	}
	var enc [43]byte // base64url of 32 octets, encoded on the stack: one allocation
	base64.RawURLEncoding.Encode(enc[:], h[:])
	return string(enc[:])
}
