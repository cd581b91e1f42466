// Package service holds what the services' handlers share: the operational routes
// (ops.go), which package tts, package witissuer and the proxy's program mount:
// /healthz, /readyz (a problem document, 503, when a check fails: keys_unavailable
// without an active signing key, store_unavailable when the replay store does not
// answer or a check fails without a code of its own) and /metrics (the Go and process
// collectors come with NewRegistry), and /.well-known/jwks.json (MountJWKS), where the
// TTS and the WIT issuer publish their signing keys. ServerDefaults fills the Config
// members both servers have (registry, logger, clock, skew, body bound) the same way in
// their New. The runner that serves them, and reads configuration files, the
// environment and flags, is cmd/internal/kit.
//
// Only cmd/, tts and witissuer import it; it imports none of them.
package service
