// Package ttsservice is the program of command tts (cmd/tts documents it): its
// configuration (the embedded development default, the file format, the environment
// overrides and flags), the checks -check-config makes, and Build, which turns a
// configuration into the server that the service runner (cmd/internal/kit) runs: the
// TTS (package tts), identity chaining's AS A and AS B at its token endpoint (package
// chaining), key rotation and the replay store.
//
// It is a package of its own, not command tts's main, so that two commands run the same
// TTS: cmd/tts, and `dialogtrust dev`, which runs it beside the WIT issuer in one
// process. Only cmd/ imports it.
package ttsservice
