package store

import (
	"context"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Replay claims single-use values (a WPT jti, an HTTP signature nonce, a handoff
// (iss, hop)) once for a time to live.
//
// Claim returns nil when key was not claimed before and is now claimed until ttl has
// passed; an *errcode.Error with code errcode.Replayed when key is already claimed; and
// an *errcode.Error of kind errcode.Incomplete (code errcode.StoreUnavailable) on any
// other outcome, including a timeout whose result is unknown. Callers reject on every
// non-nil error: the store fails closed.
//
// ttl must be positive: a claim never lives forever.
type Replay interface {
	Claim(ctx context.Context, key string, ttl time.Duration) error
}

// ValidateClaim rejects a claim no Replay accepts (an empty key, a ttl that is not
// positive), with a failed errcode.InvalidRequest. Every backend calls it first, so
// that all of them refuse the same input the same way and claim nothing for it.
func ValidateClaim(key string, ttl time.Duration) error {
	if key == "" {
		return errcode.New(errcode.InvalidRequest, "replay key is empty")
	}
	if ttl <= 0 {
		return errcode.New(errcode.InvalidRequest, "replay ttl must be positive, got %v", ttl)
	}
	return nil
}

// Replayed is the error of a claim on a key that is already claimed: a failed
// errcode.Replayed, the same from every backend.
func Replayed() error {
	return errcode.New(errcode.Replayed, "value already used")
}
