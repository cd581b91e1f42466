package chaining

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/dialogtrust/dialogtrust/tts"
)

// Mux serves the one token endpoint of the TTS binary with one handler per grant (in
// the style of fosite): it reads the body of a POST to tts.PathToken (bounded), looks
// at grant_type, requested_token_type, audience and resource only, and hands the
// request, body restored, to
//
//   - asB for grant_type jwt-bearer (RFC 7523);
//   - asA for a token exchange asking for urn:ietf:params:oauth:token-type:jwt, or one
//     without requested_token_type whose audience or resource names a peer AS
//     (identity chaining does not mandate requested_token_type, oauth.md 2.2);
//   - txn, the TTS, for everything else, which answers what it does not serve
//     (unsupported_grant_type, unsupported_token_type, a repeated parameter).
//
// A request whose routing parameters repeat goes to txn, which refuses it: no handler
// reads a value another would not. Every other path and method goes to txn unchanged.
// A nil asA or asB is not served.
func Mux(txn http.Handler, asA *GrantIssuer, asB *JWTBearer) http.Handler {
	if asA == nil && asB == nil {
		return txn
	}
	return &mux{txn: txn, asA: asA, asB: asB}
}

type mux struct {
	txn http.Handler
	asA *GrantIssuer
	asB *JWTBearer
}

func (m *mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != tts.PathToken || r.Body == nil {
		m.txn.ServeHTTP(w, r)
		return
	}
	// One byte over the bound: such a body is the TTS's to refuse (body_too_large).
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodySize+1))
	if err != nil {
		body = nil
	}
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), rest), rest}
	if err != nil || len(body) > MaxBodySize {
		m.txn.ServeHTTP(w, r)
		return
	}
	if h := m.route(body); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	m.txn.ServeHTTP(w, r)
}

// route picks the chaining handler for body, or nil for the TTS.
func (m *mux) route(body []byte) http.Handler {
	p, ok := routingParams(body)
	if !ok {
		return nil
	}
	switch p["grant_type"] {
	case GrantTypeJWTBearer:
		if m.asB != nil {
			return m.asB
		}
	case tts.GrantTypeTokenExchange:
		if m.asA == nil {
			return nil
		}
		switch rtt, set := p["requested_token_type"]; {
		case set && rtt == TokenTypeJWT:
			return m.asA
		case !set && (m.asA.IsPeer(p["audience"]) || m.asA.IsPeer(p["resource"])):
			return m.asA
		}
	}
	return nil
}

var routing = []string{"grant_type", "requested_token_type", "audience", "resource"}

// routingParams extracts the routing parameters; ok is false when grant_type or
// requested_token_type repeats or a routing value does not decode (the TTS then refuses
// the request). A repeated audience or resource names no one peer: it is dropped here,
// and the handler the request goes to refuses the repetition itself.
func routingParams(body []byte) (map[string]string, bool) {
	p := make(map[string]string, 4)
	var repeated []string
	for rest := string(body); rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil || !slices.Contains(routing, name) {
			continue
		}
		v, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, false
		}
		if _, dup := p[name]; dup {
			if name == "grant_type" || name == "requested_token_type" {
				return nil, false
			}
			repeated = append(repeated, name)
		}
		p[name] = v
	}
	for _, name := range repeated {
		delete(p, name)
	}
	return p, true
}

// MetadataFunc amends the TTS's RFC 8414 metadata (tts.Config.AmendMetadata) for the
// chaining handlers served at its token endpoint: their grant types, the token types
// they issue, and identity_chaining_requested_token_types_supported (oauth.md 2.5) when
// this AS issues grants.
func MetadataFunc(grants, bearer bool) func(*tts.Metadata) {
	return func(md *tts.Metadata) {
		add := func(list *[]string, v string) {
			if !slices.Contains(*list, v) {
				*list = append(*list, v)
			}
		}
		if grants {
			add(&md.IssuedTokenTypesSupported, TokenTypeJWT)
			add(&md.IdentityChainingRequestedTokenTypesSupported, TokenTypeJWT)
		}
		if bearer {
			add(&md.GrantTypesSupported, GrantTypeJWTBearer)
			add(&md.IssuedTokenTypesSupported, tts.TokenTypeAccessToken)
		}
	}
}
