package testkit

import (
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
)

// JWKSKIDs fetches the JWKS at url with c and returns the kids of its keys, in order; a
// failed request or a body that is not a JWKS fails the test.
func JWKSKIDs(t testing.TB, c *http.Client, url string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, b := Do(t, c, req)
	set, err := keys.ParseJWKS(b)
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys() {
		kids = append(kids, k.KID())
	}
	return kids
}
