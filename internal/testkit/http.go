package testkit

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// Get fetches url and returns the status and the body; a failed request or body read
// fails the test.
func Get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	res, b := GetWith(t, http.DefaultClient, url)
	return res.StatusCode, b
}

// GetWith fetches url with c (its cookies, its TLS) and returns the response with its
// body read and closed; a failed request or body read fails the test.
func GetWith(t testing.TB, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Do(t, c, req)
}

// Do sends req with c and returns the response with its body read and closed; a
// failed request or body read fails the test.
func Do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// CountingBody is a request body that adds the octets read from R to N: a test that
// no body is read before a request is authenticated reads N.
type CountingBody struct {
	R io.ReadCloser
	N *atomic.Int64
}

// Read reads from R, counting.
func (c CountingBody) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N.Add(int64(n))
	return n, err
}

// Close closes R.
func (c CountingBody) Close() error { return c.R.Close() }
