package tts

import (
	"net/http"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// Client authentication of the token endpoint is package oauth's (oauth.md 1.9); these
// names stay for one release.
const (
	// Deprecated: use oauth.MethodWPT.
	MethodWPT = oauth.MethodWPT
	// Deprecated: use oauth.MethodHTTPSig.
	MethodHTTPSig = oauth.MethodHTTPSig
	// Deprecated: use oauth.MethodTLSClientAuth.
	MethodTLSClientAuth = oauth.MethodTLSClientAuth
	// Deprecated: use oauth.MethodPrivateKeyJWT.
	MethodPrivateKeyJWT = oauth.MethodPrivateKeyJWT

	// Deprecated: use oauth.DefaultAssertionMaxLifetime.
	DefaultAssertionMaxLifetime = oauth.DefaultAssertionMaxLifetime
	// Deprecated: use oauth.DefaultSkew.
	DefaultSkew = oauth.DefaultSkew
)

type (
	// Requester is the authenticated workload that asks for a Txn-Token.
	//
	// Deprecated: use oauth.Client.
	Requester = oauth.Client
	// Authenticator is one way for a workload to authenticate to the token endpoint.
	//
	// Deprecated: use oauth.Authenticator.
	Authenticator = oauth.Authenticator
	// WPTAuth authenticates with a WIT and a WPT.
	//
	// Deprecated: use oauth.WPTAuth.
	WPTAuth = oauth.WPTAuth
	// HTTPSigAuth authenticates with a WIT and a WIMSE HTTP signature.
	//
	// Deprecated: use oauth.HTTPSigAuth.
	HTTPSigAuth = oauth.HTTPSigAuth
	// TLSClientAuth authenticates a workload by its TLS client certificate.
	//
	// Deprecated: use oauth.TLSClientAuth.
	TLSClientAuth = oauth.TLSClientAuth
	// PrivateKeyJWT authenticates a registered workload by a client assertion.
	//
	// Deprecated: use oauth.PrivateKeyJWT.
	PrivateKeyJWT = oauth.PrivateKeyJWT
	// RegisteredClient is a workload that may authenticate with private_key_jwt.
	//
	// Deprecated: use oauth.RegisteredClient.
	RegisteredClient = oauth.RegisteredClient
	// AssertionClaims are the claims of a client assertion.
	//
	// Deprecated: use oauth.AssertionClaims.
	AssertionClaims = oauth.AssertionClaims
)

// Deprecated: use oauth.NewWPTAuth.
var NewWPTAuth = oauth.NewWPTAuth

// Deprecated: use oauth.NewHTTPSigAuth.
var NewHTTPSigAuth = oauth.NewHTTPSigAuth

// Deprecated: use oauth.NewTLSClientAuth.
var NewTLSClientAuth = oauth.NewTLSClientAuth

// WIMSEAuthenticators returns the primary methods of oauth.md 1.9, HTTP signature
// first, then WPT.
//
// Deprecated: use oauth.WIMSEAuthenticators.
func WIMSEAuthenticators(wits *wit.Validator, replay store.Replay, audiences ...string) []Authenticator {
	return oauth.WIMSEAuthenticators(wits, replay, audiences...)
}

// NewPrivateKeyJWT returns the private_key_jwt method.
//
// Deprecated: use oauth.NewPrivateKeyJWT.
var NewPrivateKeyJWT = oauth.NewPrivateKeyJWT

// NewClientAssertion mints a private_key_jwt client assertion for workload, for the
// TTS named audience, valid for lifetime (a minute when not positive) from now.
//
// Deprecated: use oauth.NewClientAssertion.
func NewClientAssertion(key *keys.PrivateKey, workload identifier.ID, audience string, lifetime time.Duration, now time.Time) (string, error) {
	return oauth.NewClientAssertion(key, workload, audience, lifetime, now)
}

// presentedTxnToken reports a Txn-Token offered as a credential (oauth.md 1.9 item 4):
// as the bearer or proof of the Authorization field, as a WIT, as a client assertion,
// or in the Txn-Token field of a request that carries no credential at all. Only the
// JOSE header is looked at; nothing is verified.
func presentedTxnToken(r *http.Request, tr *TokenRequest, anyCredential bool) bool {
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
