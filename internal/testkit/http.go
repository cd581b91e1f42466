package testkit

import (
	"io"
	"net/http"
	"testing"
)

// Get fetches url and returns the status and the body; a failed request or body read
// fails the test.
func Get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}
