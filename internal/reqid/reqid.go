package reqid

import (
	"crypto/rand"
	"net/http"
	"unsafe"
)

// Header is the request and response field.
const Header = "X-Request-Id"

// MaxLength bounds an accepted X-Request-Id.
const MaxLength = 128

// From returns the request's identifier: its X-Request-Id when there is exactly one
// and it is 1 to MaxLength characters of [A-Za-z0-9._:-] (so it cannot forge log
// structure or carry a token of any size), else a new random one (128 bits, base32).
func From(r *http.Request) string {
	if id, ok := given(r); ok {
		return id
	}
	return generate().field[0]
}

// Set determines the request's identifier, puts it on the response and returns it.
func Set(w http.ResponseWriter, r *http.Request) string {
	// The field is written as Header.Set would (Header is in canonical form); a
	// generated identifier shares one allocation with the field's value, since this
	// runs for every request.
	if id, ok := given(r); ok {
		w.Header()[Header] = []string{id}
		return id
	}
	g := generate()
	w.Header()[Header] = g.field[:]
	return g.field[0]
}

// given is the request's own X-Request-Id, if it is one From accepts. (Header is in
// canonical form, so the map lookup is r.Header.Values(Header).)
func given(r *http.Request) (string, bool) {
	if v := r.Header[Header]; len(v) == 1 && valid(v[0]) {
		return v[0], true
	}
	return "", false
}

// generatedLength is the length of a generated identifier, crypto/rand.Text's:
// ⌈log₃₂ 2¹²⁸⌉ = 26 characters of the RFC 4648 base32 alphabet.
const generatedLength = 26

const base32Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// generated is a new identifier and the response field's value, in one allocation.
type generated struct {
	field [1]string
	text  [generatedLength]byte
}

// generate makes an identifier the way crypto/rand.Text does (each of 26 random octets
// taken modulo 32 into the base32 alphabet), in memory that is never written again
// once the string views it.
func generate() *generated {
	g := new(generated)
	_, _ = rand.Read(g.text[:]) // never fails (crypto/rand.Read)
	for i, b := range g.text {
		g.text[i] = base32Alphabet[b%32]
	}
	g.field[0] = unsafe.String(&g.text[0], len(g.text))
	return g
}

func valid(s string) bool {
	if s == "" || len(s) > MaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
