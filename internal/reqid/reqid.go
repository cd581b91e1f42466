package reqid

import (
	"crypto/rand"
	"net/http"
)

// Header is the request and response field.
const Header = "X-Request-Id"

// MaxLength bounds an accepted X-Request-Id.
const MaxLength = 128

// From returns the request's identifier: its X-Request-Id when there is exactly one
// and it is 1 to MaxLength characters of [A-Za-z0-9._:-] (so it cannot forge log
// structure or carry a token of any size), else a new random one (128 bits, base32).
func From(r *http.Request) string {
	if v := r.Header.Values(Header); len(v) == 1 && valid(v[0]) {
		return v[0]
	}
	return rand.Text()
}

// Set determines the request's identifier, puts it on the response and returns it.
func Set(w http.ResponseWriter, r *http.Request) string {
	id := From(r)
	w.Header().Set(Header, id)
	return id
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
