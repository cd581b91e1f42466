package tts

import "github.com/dialogtrust/dialogtrust/keys"

// LazyRemoteSet is keys.LazyRemoteSet, kept here for the code that found it in this
// package first: a JWKS URL that may not answer yet, refused as keys_unavailable (could
// not be completed) until it does.
type LazyRemoteSet = keys.LazyRemoteSet

// NewLazyRemoteSet is keys.NewLazyRemoteSet.
var NewLazyRemoteSet = keys.NewLazyRemoteSet
