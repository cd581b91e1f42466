package txntoken

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/plainjson"
	"github.com/dialogtrust/dialogtrust/jose"
)

// Type is the JOSE typ of a Txn-Token (oauth.md 1.7); media type application/txntoken+jwt.
const Type = "txntoken+jwt"

// HeaderName is the HTTP field that carries a Txn-Token between workloads (oauth.md 1.10).
const HeaderName = "Txn-Token"

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
// struct (TestClaimsMarshalMatchesReflection and FuzzClaimsMarshal keep the two equal)
// without reflection, since it runs for every token issued.
func (c Claims) MarshalJSON() ([]byte, error) { return c.AppendJSON(make([]byte, 0, 512)) }

// AppendJSON appends MarshalJSON's document to b, so that a signer can write the
// payload into a buffer of its own (the TTS uses one on the stack).
func (c *Claims) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	start := len(b)
	str := func(name, v string) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = plainjson.AppendString(b, v)
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
			if b, err = plainjson.AppendObject(b, o.m); err != nil {
				return nil, err
			}
		}
	}
	return append(b, '}'), nil
}

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
