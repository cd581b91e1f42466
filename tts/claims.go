package tts

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"unsafe"

	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// URNs of the token exchange profile (oauth.md 1.3, 1.4; RFC 8693 section 3), the
// names of package oauth.
const (
	GrantTypeTokenExchange = oauth.GrantTypeTokenExchange
	TokenTypeTxnToken      = oauth.TokenTypeTxnToken
	TokenTypeAccessToken   = oauth.TokenTypeAccessToken
	TokenTypeIDToken       = oauth.TokenTypeIDToken
	TokenTypeJWT           = oauth.TokenTypeJWT
	TokenTypeRefreshToken  = oauth.TokenTypeRefreshToken
	TokenTypeSAML1         = oauth.TokenTypeSAML1
	TokenTypeSAML2         = oauth.TokenTypeSAML2
	TokenTypeSelfSigned    = oauth.TokenTypeSelfSigned
	TokenTypeUnsignedJSON  = oauth.TokenTypeUnsignedJSON

	// TokenTypeTxnToken08 is the misspelt URN of the -08 example (oauth.md 1.1). It is
	// accepted as a requested_token_type from -08 peers, never emitted.
	TokenTypeTxnToken08 = oauth.TokenTypeTxnToken08

	// ClientAssertionTypeJWTBearer is the client_assertion_type of private_key_jwt.
	ClientAssertionTypeJWTBearer = oauth.ClientAssertionTypeJWTBearer
	// ClientAssertionType is the typ of a private_key_jwt client assertion.
	ClientAssertionType = oauth.ClientAssertionType
)

// newTxn returns a transaction identifier of 128 random bits (oauth.md 1.7: unique in
// the trust domain; random, so no coordination between TTS instances is needed).
func newTxn() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	// base64url of 16 octets, encoded on the stack: one allocation.
	var enc [22]byte
	base64.RawURLEncoding.Encode(enc[:], b[:])
	return string(enc[:])
}

// stringBytes views s as bytes without copying it, for searching a kilobyte of token
// in request context without copying it. The bytes must not be modified or kept.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// cloneJSONObject deep-copies a JSON object as decoded by encoding/json, so that a
// token's tctx can be extended without touching the input's.
func cloneJSONObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	_ = netjson.DecodeKeepingNumbers(b, &out)
	return out
}
