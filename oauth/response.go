package oauth

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// Response is a grant's successful answer, written by the Endpoint with status 200,
// Cache-Control no-store and Pragma no-cache (RFC 6749 section 5.1).
type Response interface {
	// AppendJSON appends the JSON document, newline-terminated as json.Encoder writes it.
	AppendJSON(b []byte) []byte
}

// AppendJSON implements Response: the document encoding/json writes for the struct
// (TestTokenResponseJSON), without reflection, since it is written for every token
// issued.
func (t *TokenResponse) AppendJSON(b []byte) []byte {
	b = append(b, `{"access_token":`...)
	b = appendJSONString(b, t.AccessToken)
	b = append(b, `,"issued_token_type":`...)
	b = appendJSONString(b, t.IssuedTokenType)
	b = append(b, `,"token_type":`...)
	b = appendJSONString(b, t.TokenType)
	b = append(b, `,"expires_in":`...)
	b = strconv.AppendInt(b, t.ExpiresIn, 10)
	b = append(b, `,"scope":`...)
	b = appendJSONString(b, t.Scope)
	return append(b, "}\n"...)
}

// SizeHint is the length the document will have, about.
func (t *TokenResponse) SizeHint() int { return len(t.AccessToken) + 192 }

// JSONResponse is a Response of any value encoding/json can write.
type JSONResponse struct{ V any }

// AppendJSON implements Response.
func (j JSONResponse) AppendJSON(b []byte) []byte {
	enc, err := json.Marshal(j.V)
	if err != nil {
		enc = []byte("null")
	}
	return append(append(b, enc...), '\n')
}

// WriteResponse writes a successful token response.
func WriteResponse(w http.ResponseWriter, resp Response, sizeHint int) {
	setResponseHeader(w.Header())
	w.WriteHeader(http.StatusOK)
	// The document is built in a pooled buffer: Write must not retain it (io.Writer),
	// and one buffer per token issued was a measurable share of the endpoint's cost.
	bp := responseBuffers.Get().(*[]byte)
	b := *bp
	if cap(b) < sizeHint {
		b = make([]byte, 0, sizeHint)
	}
	b = resp.AppendJSON(b[:0])
	_, _ = w.Write(b)
	if cap(b) <= maxPooledResponse {
		*bp = b[:0]
		responseBuffers.Put(bp)
	}
}

// setResponseHeader sets the three fields of a successful token response, as
// Header.Set would (the names are already canonical), with their values in one
// allocation rather than one each: this runs for every token issued. Each value is a
// slice of its own (capacity 1), so that Add or an in-place change of one field never
// reaches another, and the array belongs to this response alone.
func setResponseHeader(h http.Header) {
	v := &[3]string{"no-store", "no-cache", "application/json"}
	h["Cache-Control"] = v[0:1:1]
	h["Pragma"] = v[1:2:2]
	h["Content-Type"] = v[2:3:3]
}

// responseBuffers holds WriteResponse's buffers; one over maxPooledResponse is left to
// the collector rather than kept for the process's life.
var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledResponse = 64 << 10

// ServeMetadata writes an RFC 8414 section 3.2 metadata document, cacheable for five
// minutes.
func ServeMetadata(w http.ResponseWriter, md *Metadata) {
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(md)
}

// appendJSONString appends s as a JSON string the way encoding/json writes it
// (including its HTML-safe escapes), falling back to encoding/json for anything but
// plain printable ASCII.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSONByte[s[i]] {
			enc, _ := json.Marshal(s)
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSONByte marks the octets encoding/json writes unchanged inside a string:
// printable ASCII but '"', '\\' and the HTML-sensitive '<', '>' and '&'. (A table: the
// response repeats the whole token, a kilobyte, through this test.)
var plainJSONByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
