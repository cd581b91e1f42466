// Package service runs the service binaries (cmd/tts, cmd/wit-issuer, and "dialogtrust
// proxy"): one runner, so that what every service does the same way is written once.
// A binary describes itself as a Program (its name, its configuration Spec, its checks
// and its Build) and hands it to Main; Build turns the configuration into a Server with
// the binary's handler.
//
// Read run.go first (Program, Main: what a binary hands the runner), then config.go
// (Spec, Load: files, environment and flags), server.go (Server, the listeners) and
// ops.go (health, readiness, metrics, JWKS).
//
// What the runner does, in order:
//
//   - configuration (config.go): -check-config is taken off the command line first
//     (CheckConfigFlag); then the configuration is the embedded development default or
//     the file named by --config or <PREFIX>CONFIG, parsed as strict YAML (an unknown
//     member is an error); then the environment overrides <PREFIX>NAME, bound to
//     configuration members by a table (CommonEnv plus the binary's own: ServiceSpec;
//     an unknown name is an error, like an unknown member); then the flags, bound the
//     same way (CommonFlags plus the binary's own).
//     Each later layer wins. The members both files have (listen, issuer,
//     trust_domains, log, debug, tracing, skew, shutdown_timeout) are Base, which each
//     binary's Config inlines, so the file formats do not change.
//   - the JSON logger at the configured level (NewLogger);
//   - with -check-config: the binary's Check, "<name>: configuration ok", and no
//     listener, file, key or store is opened;
//   - else Build; the pprof listener when debug.pprof_listen names a loopback address
//     (pprof.go: net/http/pprof on that address alone, never on the service's
//     listener; off by default); the "<name> started" log line, the development warning and banner
//     when the binary runs a development configuration (Banner), "<name> listening on
//     <url> ..." on stdout, and serving until SIGTERM or SIGINT;
//   - then the graceful stop: a drain in which every response closes its connection
//     (internal/graceful), Shutdown within the shutdown timeout, and Close of whatever
//     Build opened, in reverse order.
//
// A binary with more than one face (the proxy: egress, ingress, operational routes)
// opens further listeners with Server.HandleMore, or Server.HandleMoreOn for a Unix
// domain socket from ListenUnix (mode set before the socket appears, a stale socket
// replaced only if it is one, removed at the stop); they have the same bounds and stop
// in the same graceful stop.
//
// The server (Server.Handle) has the bounds of package httpserver, which library users
// get from httpserver.New: ReadHeaderTimeout 10s, ReadTimeout 30s (the deadline for
// reading the body), WriteTimeout 30s, IdleTimeout 2m, MaxHeaderBytes 64 KiB (the WIT
// issuer lowers it to 32 KiB).
//
// The operational routes (ops.go) are shared by package tts and package witissuer:
// /healthz, /readyz (a problem document, 503, when a check fails: keys_unavailable
// without an active signing key, store_unavailable when the replay store does not
// answer or a check fails without a code of its own) and /metrics (the Go and process
// collectors come with NewRegistry), and /.well-known/jwks.json (MountJWKS), where
// both publish their signing keys. ServerDefaults fills the Config members both
// servers have (registry, logger, clock, skew, body bound) the same way in their New.
//
// Only cmd/, tts and witissuer import it; it imports none of them.
package service
