package tts

import (
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// presentedTxnToken reports a Txn-Token offered as a credential (oauth.md 1.9 item 4):
// as the bearer or proof of the Authorization field, as a WIT, as a client assertion,
// or in the Txn-Token field of a request that carries no credential at all. Only the
// JOSE header is looked at; nothing is verified.
func presentedTxnToken(r *http.Request, tr *oauth.TokenRequest, anyCredential bool) bool {
	if isTxnToken(tr.ClientAssertion) {
		return true
	}
	for _, v := range r.Header.Values("Authorization") {
		if _, cred, _ := cutSpace(v); isTxnToken(strings.TrimSpace(cred)) {
			return true
		}
	}
	for _, name := range []string{wit.HeaderName, wpt.LegacyHeader} {
		for _, v := range r.Header.Values(name) {
			if isTxnToken(strings.TrimSpace(v)) {
				return true
			}
		}
	}
	return !anyCredential && len(r.Header.Values(txntoken.HeaderName)) > 0
}

func isTxnToken(s string) bool {
	if s == "" || strings.Count(s, ".") != 2 {
		return false
	}
	t, err := jose.Parse(s, jose.DefaultMaxTokenSize)
	return err == nil && jose.TypeMatches(t.Typ, txntoken.Type)
}

func cutSpace(s string) (string, string, bool) {
	s = strings.TrimSpace(s)
	a, b, ok := strings.Cut(s, " ")
	return a, strings.TrimLeft(b, " "), ok
}

func anyOf(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if h == w {
				return true
			}
		}
	}
	return false
}
