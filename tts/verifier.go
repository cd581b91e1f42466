package tts

import "github.com/dialogtrust/dialogtrust/txntoken"

// Verifier validates Txn-Tokens at a receiver (oauth.md 1.10).
//
// Deprecated: use txntoken.Verifier.
type Verifier = txntoken.Verifier

// VerifierOption configures a Verifier.
//
// Deprecated: use txntoken.VerifierOption.
type VerifierOption = txntoken.VerifierOption

// Options of a Verifier.
var (
	// Deprecated: use txntoken.WithIssuer.
	WithIssuer = txntoken.WithIssuer
	// Deprecated: use txntoken.WithClock.
	WithVerifierClock = txntoken.WithClock
	// Deprecated: use txntoken.WithSkew.
	WithVerifierSkew = txntoken.WithSkew
	// Deprecated: use txntoken.WithMaxLifetime.
	WithMaxLifetime = txntoken.WithMaxLifetime
	// Deprecated: use txntoken.WithAlgorithms.
	WithAlgorithms = txntoken.WithAlgorithms
)

// Defaults of a Verifier.
const (
	// Deprecated: use txntoken.DefaultMaxLifetime.
	DefaultVerifierMaxLifetime = txntoken.DefaultMaxLifetime
	// Deprecated: use txntoken.DefaultMaxTokenSize.
	DefaultMaxTokenSize = txntoken.DefaultMaxTokenSize
)

// NewVerifier returns a Verifier for the receiver's trust domain, with the TTS's keys.
//
// Deprecated: use txntoken.NewVerifier.
var NewVerifier = txntoken.NewVerifier

// DialogMatches checks that the token records the dialog dlg in tctx.dlg
// (dialog-binding section 10).
//
// Deprecated: use txntoken.DialogMatches.
var DialogMatches = txntoken.DialogMatches
