package httpsig

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
)

// A request whose body is broken on the wire (shorter than its Content-Length, or a
// malformed chunk) is the client's fault: a failed check (4xx, kind failed), never
// "could not be completed" (503). The signature is verified before the body is read, so
// a copy of someone's WIT without its key gets invalid_signature and no body is read.
func TestBrokenRequestBodyIsAFailedCheck(t *testing.T) {
	f := newFixture(t, keys.ES256)
	v := f.verifier()
	bodyRead := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counted := &countingBody{ReadCloser: r.Body}
		r.Body = counted
		_, err := v.VerifyRequest(r.Context(), r)
		bodyRead <- counted.n > 0
		if err != nil {
			problem.Write(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	const body = `{"amount":100}`
	signed := func(t *testing.T, withKey bool) http.Header {
		req := newRequest(t, http.MethodPost, testURL, body)
		req.Header.Set("Content-Type", "application/json")
		signer := f.client.signer
		if !withKey {
			// The client's WIT, copied, with another key: the attacker does not hold the
			// WIT's key.
			signer = NewSigner(f.party(keys.ES256, "spiffe://example.org/attacker").key, f.client.wit, WithClock(f.clock))
		}
		if _, err := signer.SignRequest(req, testAudience); err != nil {
			t.Fatal(err)
		}
		return req.Header
	}
	for _, tc := range []struct {
		name       string
		withKey    bool
		chunked    bool
		wantStatus int
		wantCode   string
		wantRead   bool
	}{
		{"short body, signed", true, false, http.StatusBadRequest, "invalid_request", true},
		{"bad chunk, signed", true, true, http.StatusBadRequest, "invalid_request", true},
		{"short body, copied WIT without its key", false, false, http.StatusUnauthorized, "invalid_signature", false},
		{"bad chunk, copied WIT without its key", false, true, http.StatusUnauthorized, "invalid_signature", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := signed(t, tc.withKey)
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /api/transfer HTTP/1.1\r\nHost: server.example\r\n")
			if err := h.Write(conn); err != nil {
				t.Fatal(err)
			}
			if tc.chunked {
				// A chunk announced as 5 octets, then a chunk size that is not hex.
				fmt.Fprintf(conn, "Transfer-Encoding: chunked\r\n\r\n5\r\n%s\r\nzz\r\n", body[:5])
			} else {
				fmt.Fprintf(conn, "Content-Length: %d\r\n\r\n%s", len(body), body[:5]) // the rest never comes
			}
			conn.(*net.TCPConn).CloseWrite()
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			read := <-bodyRead
			defer res.Body.Close()
			var p problem.Details
			b, _ := io.ReadAll(res.Body)
			_ = json.Unmarshal(b, &p)
			if res.StatusCode != tc.wantStatus || p.Code != tc.wantCode || p.Kind != "failed" {
				t.Fatalf("status %d %s, want %d %s and kind failed", res.StatusCode, strings.TrimSpace(string(b)), tc.wantStatus, tc.wantCode)
			}
			if read != tc.wantRead {
				t.Fatalf("body read: %v, want %v", read, tc.wantRead)
			}
		})
	}
}

type countingBody struct {
	io.ReadCloser
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += n
	return n, err
}
