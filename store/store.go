package store

import (
	"context"
	"time"
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
