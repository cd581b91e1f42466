package store

import (
	"context"
	"math"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// NoExpiry, given as a ttl, keeps a record until it is deleted. A handoff delegate keeps
// the record of a hop whose outcome is unknown until its operator resolves it
// (handoff-context section 5.2), so "forever" has to be sayable; it is a named value so
// that a zero ttl stays an error instead of quietly meaning "forever".
const NoExpiry = time.Duration(math.MaxInt64)

// MaxRecordSize bounds one record value. A handoff record holds a digest, a state and the
// octets of one signed status, which fit comfortably.
const MaxRecordSize = 64 << 10

// Records keeps small records under opaque keys: the (iss, hop) records of a handoff
// delegate (handoff-context section 5.2), and the records of a dialog registry (dialog.NewRegistry).
//
// As with Replay, the key is the caller's and the store keeps only a digest of it. A
// value is opaque, non-empty and at most MaxRecordSize octets; ttl is positive, or
// NoExpiry.
//
// Records fail closed: every error that is not a caller mistake (errcode.InvalidRequest)
// is an Incomplete errcode.StoreUnavailable, including a timeout whose outcome is
// unknown, a lost connection and a full memory store. A store never drops a live record
// to make room for another one. Callers must treat an error as "could not be
// completed", never as "no record".
type Records interface {
	// Create stores value under key with ttl unless a live record is there. It returns
	// (nil, nil) when it stored value, and (existing, nil) when a live record was
	// already there, which it leaves unchanged.
	Create(ctx context.Context, key string, value []byte, ttl time.Duration) (existing []byte, err error)
	// Get returns the live record under key, or (nil, nil) when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Swap replaces the record under key with value and a new ttl if the record still
	// holds old (compare and swap). It returns false, with no error, when the record
	// holds something else or is gone.
	Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (bool, error)
	// Delete removes the record under key if it still holds old. It returns false, with
	// no error, when the record holds something else or is gone.
	Delete(ctx context.Context, key string, old []byte) (bool, error)
}

// ValidateRecordKey rejects a key no Records accepts, with a failed
// errcode.InvalidRequest. Every backend calls it first, so that all of them refuse the
// same input the same way.
func ValidateRecordKey(key string) error {
	if key == "" {
		return errcode.New(errcode.InvalidRequest, "record key is empty")
	}
	return nil
}

// ValidateRecord rejects a record no Records accepts (an empty key or value, a value
// over MaxRecordSize, a ttl that is neither positive nor NoExpiry), with a failed
// errcode.InvalidRequest.
func ValidateRecord(key string, value []byte, ttl time.Duration) error {
	if err := ValidateRecordKey(key); err != nil {
		return err
	}
	if len(value) == 0 {
		return errcode.New(errcode.InvalidRequest, "record value is empty")
	}
	if len(value) > MaxRecordSize {
		return errcode.New(errcode.InvalidRequest, "record value is %d octets, limit %d", len(value), MaxRecordSize)
	}
	if ttl <= 0 {
		return errcode.New(errcode.InvalidRequest, "record ttl must be positive or NoExpiry, got %v", ttl)
	}
	return nil
}
