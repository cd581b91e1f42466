package revokeapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// A method the API does not serve, on either path: the refusal is a problem document
// with a stable code, as every other refusal of the API (the project's rule), and the
// Allow header. Before the fix it was http.Error's text/plain "method not allowed",
// which a client (the CLI) could only show as an unknown error.
func TestAttackAPI2_MethodRefusalsCarryACode(t *testing.T) {
	w := newWorld(t)
	sessions := strings.TrimSuffix(w.url, revokeapi.Path) + revokeapi.SessionsPath
	for _, tc := range []struct{ url, method, allow string }{
		{w.url, "PUT", "GET, POST, DELETE"}, {w.url, "PATCH", "GET, POST, DELETE"},
		{w.url, "OPTIONS", "GET, POST, DELETE"}, {w.url, "TRACE", "GET, POST, DELETE"},
		{sessions, "GET", "POST"}, {sessions, "DELETE", "POST"}, {sessions, "HEAD", "POST"},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q", tc.method, tc.url, res.StatusCode, res.Header.Get("Allow"))
		}
		if tc.method == "HEAD" {
			continue // no body to read a code from
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Errorf("%s %s: Content-Type %q, want a problem document", tc.method, tc.url, ct)
		}
		if c := errcode.CodeOf(problem.Read(res.StatusCode, b)); c != errcode.InvalidRequest {
			t.Errorf("%s %s: code %q, want %s", tc.method, tc.url, c, errcode.InvalidRequest)
		}
	}
}
