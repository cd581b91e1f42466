package chaining

import (
	"github.com/dialogtrust/dialogtrust/internal/plainjson"
	"github.com/dialogtrust/dialogtrust/jose"
)

// decodeGrantClaims decodes an authenticated (or about to be) grant payload into the
// zero GrantClaims *g: directly when it is in the plain form AS A writes
// (plainjson.ScanNestedObject: each known claim once, strings plain, one aud as a
// string, times as integers, requested_cnf an object with jkt only), else with
// encoding/json and the exact-name check through jose.DecodeClaims, which also gives
// every error. The two agree on every plain payload (FuzzDecodeGrantClaims).
func decodeGrantClaims(payload []byte, g *GrantClaims) error {
	if decodePlainGrantClaims(payload, g) {
		return nil
	}
	*g = GrantClaims{}
	return jose.DecodeClaims(payload, g)
}

// decodePlainGrantClaims is the direct path of decodeGrantClaims; false leaves *g to be
// reset. Anything it does not know, or knows in another form (a repeated claim, an
// array aud, a member outside GrantClaims or requested_cnf), is left to encoding/json.
func decodePlainGrantClaims(payload []byte, g *GrantClaims) bool {
	// One copy of the payload; the claim strings are substrings of it. aud, the times,
	// scope and requested_cnf are held in one allocation.
	text := string(payload)
	var seen [9]bool // iss sub aud iat nbf exp jti scope requested_cnf
	var held *struct {
		aud   [1]string
		times [3]jose.NumericDate // iat nbf exp
		scope string
		cnf   Confirmation
	}
	hold := func() {
		if held == nil {
			held = &struct {
				aud   [1]string
				times [3]jose.NumericDate
				scope string
				cnf   Confirmation
			}{}
		}
	}
	return plainjson.ScanNestedObject(text, 1, func(ns, vs plainjson.Span) bool {
		name, value := text[ns.Start:ns.End], text[vs.Start:vs.End]
		var i int
		switch name {
		case "iss":
			i = 0
		case "sub":
			i = 1
		case "aud":
			i = 2
		case "iat":
			i = 3
		case "nbf":
			i = 4
		case "exp":
			i = 5
		case "jti":
			i = 6
		case "scope":
			i = 7
		case "requested_cnf":
			i = 8
		default:
			return false
		}
		if seen[i] {
			return false
		}
		seen[i] = true
		switch value[0] {
		case '"':
			s := value[1 : len(value)-1]
			switch i {
			case 0:
				g.Iss = s
			case 1:
				g.Sub = s
			case 2:
				hold()
				held.aud[0] = s
				g.Aud = held.aud[:]
			case 6:
				g.Jti = s
			case 7:
				hold()
				held.scope = s
				g.Scope = &held.scope
			default:
				return false
			}
		case '{':
			if i != 8 {
				return false
			}
			hold()
			if !decodePlainConfirmation(value, &held.cnf) {
				return false
			}
			g.RequestedCnf = &held.cnf
		default: // digits
			if i < 3 || i > 5 {
				return false
			}
			d, ok := jose.ParsePlainNumericDate(value)
			if !ok {
				return false
			}
			hold()
			held.times[i-3] = d
			switch i {
			case 3:
				g.Iat = &held.times[0]
			case 4:
				g.Nbf = &held.times[1]
			case 5:
				g.Exp = &held.times[2]
			}
		}
		return true
	})
}

// decodePlainConfirmation decodes a plain requested_cnf object: jkt at most once, a
// string, nothing else.
func decodePlainConfirmation(text string, cnf *Confirmation) bool {
	seen := false
	return plainjson.ScanObject(text, func(ns, vs plainjson.Span) bool {
		value := text[vs.Start:vs.End]
		if text[ns.Start:ns.End] != "jkt" || seen || value[0] != '"' {
			return false
		}
		seen = true
		cnf.JKT = value[1 : len(value)-1]
		return true
	})
}
