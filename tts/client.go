package tts

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Proof methods of a Client.
const (
	// Deprecated: use proof.WPT.
	ProofWPT = proof.WPT
	// Deprecated: use proof.HTTPSig.
	ProofHTTPSig = proof.HTTPSig
)

// Client asks a TTS token endpoint for Txn-Tokens (txntoken.Client). Its default proof
// is now the HTTP signature (proof.HTTPSig, the zero value); set Proof to proof.WPT for
// a WPT.
//
// Deprecated: use txntoken.Client.
type Client = txntoken.Client

// Request is one Txn-Token request (txntoken.Request).
//
// Deprecated: use txntoken.Request.
type Request = txntoken.Request

// NewSelfSignedToken mints a self_signed subject token (txntoken.NewSelfSignedToken).
//
// Deprecated: use txntoken.NewSelfSignedToken.
func NewSelfSignedToken(key *keys.PrivateKey, workload identifier.ID, sub, tts, scope string, lifetime time.Duration, now time.Time) (string, error) {
	return txntoken.NewSelfSignedToken(key, workload, sub, tts, scope, lifetime, now)
}

// Discover fetches and checks a TTS's RFC 8414 metadata (oauth.Discover; the issuer
// must be baseURL, the token endpoint and JWKS on its origin). A TTS that does not
// answer is tts_unavailable, where oauth.Discover says as_unavailable.
//
// Deprecated: use oauth.Discover.
func Discover(ctx context.Context, hc *http.Client, baseURL string) (*Metadata, error) {
	md, err := oauth.Discover(ctx, hc, baseURL)
	var e *errcode.Error
	if errors.As(err, &e) && e.Code == errcode.ASUnavailable {
		unavailable := *e
		unavailable.Code = errcode.TTSUnavailable
		return nil, &unavailable
	}
	return md, err
}
