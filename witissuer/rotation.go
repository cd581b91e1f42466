package witissuer

import "github.com/dialogtrust/dialogtrust/keys"

// The issuer's key rotation is keys.Rotator, shared with the TTS. These names stay for
// one release.

// Key states in a RingState.
//
// Deprecated: use keys.KeyActive, keys.KeyNext and keys.KeyRetiring.
const (
	KeyActive   = keys.KeyActive
	KeyNext     = keys.KeyNext
	KeyRetiring = keys.KeyRetiring
)

// DefaultPublishDelay is RotationConfig.PublishDelay's default.
//
// Deprecated: use keys.DefaultPublishDelay.
const DefaultPublishDelay = keys.DefaultPublishDelay

type (
	// KeyRecord is one signing key and where it stands in rotation.
	//
	// Deprecated: use keys.KeyRecord.
	KeyRecord = keys.KeyRecord
	// RingState is the persistent form of a Rotator.
	//
	// Deprecated: use keys.RingState.
	RingState = keys.RingState
	// RotationConfig configures a Rotator.
	//
	// Deprecated: use keys.RotationConfig.
	RotationConfig = keys.RotationConfig
	// Rotator rotates the issuer's signing keys publish-before-use.
	//
	// Deprecated: use keys.Rotator.
	Rotator = keys.Rotator
)

// NewRotator starts from state.
//
// Deprecated: use keys.NewRotator.
func NewRotator(state RingState, cfg RotationConfig) (*Rotator, error) {
	return keys.NewRotator(state, cfg)
}

// NewStaticRotator is a Rotator holding one active key.
//
// Deprecated: use keys.NewStaticRotator.
func NewStaticRotator(active *keys.PrivateKey, cfg RotationConfig) (*Rotator, error) {
	return keys.NewStaticRotator(active, cfg)
}
