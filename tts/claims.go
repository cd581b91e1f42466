package tts

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
)

// Type is the JOSE typ of a Txn-Token (oauth.md 1.7); media type application/txntoken+jwt.
const Type = "txntoken+jwt"

// HeaderName is the HTTP field that carries a Txn-Token between workloads (oauth.md 1.10).
const HeaderName = "Txn-Token"

// URNs of the token exchange profile (oauth.md 1.3, 1.4; RFC 8693 section 3).
const (
	GrantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeTxnToken      = "urn:ietf:params:oauth:token-type:txn_token"
	TokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeIDToken       = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
	TokenTypeRefreshToken  = "urn:ietf:params:oauth:token-type:refresh_token"
	TokenTypeSAML1         = "urn:ietf:params:oauth:token-type:saml1"
	TokenTypeSAML2         = "urn:ietf:params:oauth:token-type:saml2"
	TokenTypeSelfSigned    = "urn:ietf:params:oauth:token-type:self_signed"
	TokenTypeUnsignedJSON  = "urn:ietf:params:oauth:token-type:unsigned_json"

	// TokenTypeTxnToken08 is the misspelt URN of the -08 example (oauth.md 1.1). It is
	// accepted as a requested_token_type from -08 peers, never emitted.
	TokenTypeTxnToken08 = "urn:ietf:params:oauth:token-type:txn-token"

	// ClientAssertionTypeJWTBearer is the client_assertion_type of private_key_jwt.
	ClientAssertionTypeJWTBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// ClientAssertionType is the typ of a private_key_jwt client assertion.
	ClientAssertionType = "client-authentication+jwt"
)

// DialogMember is the tctx member that records the dialog (dialog-binding section 10).
const DialogMember = "dlg"

// Claims are the claims of a Txn-Token, in the order the TTS writes them (oauth.md 1.7).
type Claims struct {
	Iss   string            `json:"iss,omitempty"`
	Iat   *jose.NumericDate `json:"iat"`
	Exp   *jose.NumericDate `json:"exp"`
	Aud   jose.Audience     `json:"aud"`
	Txn   string            `json:"txn"`
	Sub   string            `json:"sub"`
	Scope string            `json:"scope"`
	// ReqWL is the workload that requested this token: one identifier (the editor's
	// copy). A -08 peer may send several joined by commas; CallChain reads both.
	ReqWL string `json:"req_wl"`
	// ReqChain is the Call Chain of a replaced token: every requester, oldest first, the
	// last being ReqWL. Absent on a token that was never replaced (oauth.md 1.8 keeps
	// the mechanism open; this one keeps req_wl a single string as the editor's copy
	// wants, and loses no requester as -08 wants).
	ReqChain []string `json:"req_chain,omitempty"`
	// Ext counts the replacements in this token's history that extended its lifetime;
	// the TTS caps it (oauth.md 1.8, SHOULD limit).
	Ext  int            `json:"ext,omitempty"`
	Tctx map[string]any `json:"tctx,omitempty"`
	Rctx map[string]any `json:"rctx,omitempty"`
}

// MarshalJSON writes the claims in field order. It is the encoding/json output of the
// struct (TestClaimsMarshalMatchesReflection keeps the two equal) without reflection,
// since it runs for every token issued.
func (c Claims) MarshalJSON() ([]byte, error) { return c.appendJSON(make([]byte, 0, 512)) }

// appendJSON appends MarshalJSON's document to b.
func (c *Claims) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	start := len(b)
	str := func(name, v string) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = appendJSONString(b, v)
	}
	raw := func(name string, v any) error {
		enc, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = append(b, enc...)
		return nil
	}
	num := func(name string, d *jose.NumericDate) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		if d == nil {
			b = append(b, "null"...)
			return
		}
		b = strconv.AppendInt(b, int64(*d), 10)
	}
	if c.Iss != "" {
		str("iss", c.Iss)
	}
	num("iat", c.Iat)
	num("exp", c.Exp)
	if len(c.Aud) == 1 {
		str("aud", c.Aud[0])
	} else if err := raw("aud", c.Aud); err != nil {
		return nil, err
	}
	str("txn", c.Txn)
	str("sub", c.Sub)
	str("scope", c.Scope)
	str("req_wl", c.ReqWL)
	if len(c.ReqChain) > 0 {
		if err := raw("req_chain", c.ReqChain); err != nil {
			return nil, err
		}
	}
	if c.Ext != 0 {
		b = append(b, `,"ext":`...)
		b = strconv.AppendInt(b, int64(c.Ext), 10)
	}
	for _, o := range [...]struct {
		name string
		m    map[string]any
	}{{`,"tctx":`, c.Tctx}, {`,"rctx":`, c.Rctx}} {
		if len(o.m) > 0 {
			b = append(b, o.name...)
			var err error
			if b, err = appendJSONObject(b, o.m); err != nil {
				return nil, err
			}
		}
	}
	return append(b, '}'), nil
}

// appendJSONObject appends m as encoding/json writes a map[string]any: members sorted
// by name (octet order), each value as json.Marshal writes it. The values a token
// request puts there (strings, and JSON text as the client sent it) are written
// directly; any other value goes through json.Marshal.
func appendJSONObject(b []byte, m map[string]any) ([]byte, error) {
	var arr [8]string
	names := arr[:0]
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, name)
		b = append(b, ':')
		switch v := m[name].(type) {
		case string:
			b = appendJSONString(b, v)
		case json.RawMessage:
			if plainJSONText(v) {
				b = append(b, v...)
				continue
			}
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		default:
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		}
	}
	return append(b, '}'), nil
}

// plainJSONText reports JSON text that encoding/json would write unchanged: valid, with
// no white space to compact away and nothing it escapes for HTML safety ('<', '>', '&',
// and U+2028 and U+2029, whose UTF-8 encodings begin with 0xE2).
func plainJSONText(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return json.Valid(v)
}

// appendJSONString appends s as a JSON string the way encoding/json writes it
// (including its HTML-safe escapes), falling back to encoding/json for anything but
// plain printable ASCII.
func appendJSONString(b []byte, s string) []byte {
	if !plainJSONString(s) {
		enc, _ := json.Marshal(s)
		return append(b, enc...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSONString reports a string encoding/json writes between quotes unchanged.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainJSONByte[s[i]] {
			return false
		}
	}
	return true
}

// plainJSONByte marks the octets encoding/json writes unchanged inside a string:
// printable ASCII but '"', '\\' and the HTML-sensitive '<', '>' and '&'. (A table: the
// response repeats the whole Txn-Token, a kilobyte, through this test.)
var plainJSONByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Dialog returns tctx.dlg, or "" when the token records no dialog.
func (c *Claims) Dialog() string {
	if c == nil || c.Tctx == nil {
		return ""
	}
	s, _ := c.Tctx[DialogMember].(string)
	return s
}

// ScopeList returns the scope claim split at spaces.
func (c *Claims) ScopeList() []string { return strings.Fields(c.Scope) }

// CallChain returns the requesters of this token, oldest first: req_chain when present;
// else req_wl, split at commas when it is a -08 list of identifiers (oauth.md 1.1:
// accept -08 peers where free); else req_wl alone.
func (c *Claims) CallChain() []string {
	if len(c.ReqChain) > 0 {
		return append([]string(nil), c.ReqChain...)
	}
	if c.ReqWL == "" {
		return nil
	}
	if _, err := identifier.Parse(c.ReqWL); err == nil || !strings.Contains(c.ReqWL, ",") {
		return []string{c.ReqWL}
	}
	parts := strings.Split(c.ReqWL, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if _, err := identifier.Parse(p); err != nil {
			return []string{c.ReqWL}
		}
		out = append(out, p)
	}
	return out
}

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

// Hash returns base64url(SHA-256(token)): the only form in which a token is logged
// (oauth.md 1.12).
func Hash(token string) string {
	h := sha256.Sum256(stringBytes(token))
	var enc [43]byte // base64url of 32 octets, encoded on the stack: one allocation
	base64.RawURLEncoding.Encode(enc[:], h[:])
	return string(enc[:])
}

// stringBytes views s as bytes without copying it, for hashing: two hashes of a token
// of a kilobyte run on every issuance, and []byte(s) would copy it each time. The
// bytes must not be modified or kept.
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
	_ = decodeJSON(b, &out)
	return out
}

// decodeJSON decodes one JSON value with numbers kept as json.Number, so that members
// of tctx and rctx survive a replacement octet for octet (a float64 would round large
// integers), and refuses trailing data.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errTrailing
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailing
	}
	return nil
}

var errTrailing = errors.New("trailing data after the JSON value")
