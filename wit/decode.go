package wit

import (
	"github.com/dialogtrust/dialogtrust/internal/plainjson"
	"github.com/dialogtrust/dialogtrust/jose"
)

// decodeClaims decodes an authenticated payload into the zero Claims *c: directly when
// it is in the plain form an issuer writes (plainjson.ScanNestedObject: each known
// claim once, strings plain, times as integers, cnf an object with jwk only), else with
// encoding/json and the exact-name check through jose.DecodeClaims. Every WIT a service
// reads went through both of those before; the direct path is one scan and a few
// allocations. The two agree on every plain payload (FuzzDecodeClaims).
func decodeClaims(payload []byte, c *Claims) error {
	if decodePlainClaims(payload, c) {
		return nil
	}
	*c = Claims{}
	return jose.DecodeClaims(payload, c)
}

// decodePlainClaims is the direct path of decodeClaims; false leaves *c to be reset.
// Anything it does not know, or knows in another form (a repeated claim, a member
// outside Claims or outside cnf, a time that is not an integer), is left to
// encoding/json, which also gives the error.
func decodePlainClaims(payload []byte, c *Claims) bool {
	// One copy of the payload; the claim strings are substrings of it. The times and cnf
	// are held in one allocation.
	text := string(payload)
	var seen [7]bool // iss sub iat nbf exp jti cnf
	var held *struct {
		times [3]jose.NumericDate // iat nbf exp
		cnf   Confirmation
	}
	hold := func() {
		if held == nil {
			held = &struct {
				times [3]jose.NumericDate
				cnf   Confirmation
			}{}
		}
	}
	return plainjson.ScanNestedObject(text, 2, func(ns, vs plainjson.Span) bool {
		name, value := text[ns.Start:ns.End], text[vs.Start:vs.End]
		var i int
		var dst *string
		switch name {
		case "iss":
			i, dst = 0, &c.Iss
		case "sub":
			i, dst = 1, &c.Sub
		case "iat":
			i = 2
		case "nbf":
			i = 3
		case "exp":
			i = 4
		case "jti":
			i, dst = 5, &c.Jti
		case "cnf":
			i = 6
		default:
			return false
		}
		if seen[i] {
			return false
		}
		seen[i] = true
		switch value[0] {
		case '"':
			if dst == nil {
				return false
			}
			*dst = value[1 : len(value)-1]
		case '{':
			if i != 6 {
				return false
			}
			hold()
			if !decodePlainConfirmation(value, &held.cnf) {
				return false
			}
			c.Cnf = &held.cnf
		default: // digits
			if i < 2 || i > 4 {
				return false
			}
			d, ok := jose.ParsePlainNumericDate(value)
			if !ok {
				return false
			}
			hold()
			held.times[i-2] = d
			switch i {
			case 2:
				c.Iat = &held.times[0]
			case 3:
				c.Nbf = &held.times[1]
			case 4:
				c.Exp = &held.times[2]
			}
		}
		return true
	})
}

// decodePlainConfirmation decodes a plain cnf object: jwk at most once, nothing else.
// jwk is kept as its JSON text, as json.RawMessage keeps it (a copy: encoding/json's
// RawMessage does not alias its input either).
func decodePlainConfirmation(text string, cnf *Confirmation) bool {
	seen := false
	return plainjson.ScanNestedObject(text, 1, func(ns, vs plainjson.Span) bool {
		if text[ns.Start:ns.End] != "jwk" || seen {
			return false
		}
		seen = true
		cnf.JWK = []byte(text[vs.Start:vs.End])
		return true
	})
}
