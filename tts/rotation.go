package tts

import "github.com/dialogtrust/dialogtrust/keys"

// Rotator rotates the TTS's signing keys publish-before-use. It is keys.Rotator, shared
// with the wit-issuer; its state is a keys.RingState.
//
// Deprecated: use keys.Rotator (keys.OpenRotator opens one from a data directory).
type Rotator = keys.Rotator
