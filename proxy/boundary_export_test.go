package proxy

import "net/http"

// ContainsToken is containsToken, for the tests.
var ContainsToken = containsToken

// LinkGuard is the guard of a linked dialog's requests over base, for the tests.
func LinkGuard(base http.RoundTripper, d1, d2, txnToken string) http.RoundTripper {
	return linkGuard{base: base, d1: d1, d2: d2, txnToken: txnToken}
}
