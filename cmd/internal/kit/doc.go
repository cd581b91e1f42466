// Package kit is the one place the service programs are wired from (cmd/tts,
// cmd/wit-issuer, `dialogtrust proxy`, and `dialogtrust dev`, which runs them in one
// process): the service runner, and one opener per configuration section. A program
// (cmd/internal/ttsservice, cmd/internal/witissuerservice, cmd/internal/proxyservice)
// describes itself as a Program (its name, its configuration Spec, its checks and its
// Build) and hands it to Main or Run; Build turns the configuration into a Server with
// the program's handler, opening each section with its opener. Read run.go first, then
// the openers. Being under cmd/internal, only cmd/ can import it: only the commands read
// configuration files, the environment and flags.
//
// The openers, one per section:
//
//   - store (store.go): OpenStore opens the replay store and, on Redis, the section's
//     one client, which the dialog and handoff records (Store.Records) and the shared
//     key ring share;
//   - keys (keys.go, sharedkeys.go): OpenKeys opens the signing keys with their Rotator
//     (a file, a data directory, memory, or the shared ring in the store's Redis), their
//     readiness check and the rotation loop at KeysConfig.RotationStep();
//   - a JWKS (jwks.go): JWKS, the jwks_url / jwks_file pair every section that trusts
//     an issuer embeds, and OpenJWKS, of that pair or an issuer's metadata;
//   - the SPIFFE Workload API (workloadapi.go): OpenWorkloadAPI, the X.509-SVID source
//     kept current, with go-spiffe's log on the service's;
//   - a WIT issuer's client transport from files (witclient.go).
//   - authzen (authzen.go): OpenAuthZEN, the client of an AuthZEN 1.0 policy decision
//     point (the TTS's authzen, the proxy's ingress.authzen), https or loopback only.
//
// What the runner does, in order:
//
//   - configuration (config.go): -check-config is taken off the command line first
//     (CheckConfigFlag); then the configuration is the embedded development default (a
//     binary without one, the proxy, requires a file) or the file named by --config or
//     <PREFIX>CONFIG, parsed as strict YAML (an unknown
//     member is an error); then the environment overrides <PREFIX>NAME, bound to
//     configuration members by a table (CommonEnv plus the binary's own: ServiceSpec;
//     an unknown name is an error, like an unknown member); then the flags, bound the
//     same way (CommonFlags plus the binary's own).
//     Each later layer wins. The members both files have (listen, issuer,
//     trust_domains, log, debug, tracing, skew, shutdown_timeout) are Base, which each
//     binary's Config inlines, so the file formats do not change.
//   - the logger at the configured level, JSON or, with log.format text, slog's text
//     lines (NewLogger);
//   - the binary's Check; a refusal that starts with a member's YAML path is located
//     (configerror.go, Source.Locate): the file, line and column with the source lines
//     and a caret, as the YAML parser's errors show them, or the environment variable
//     or flag that set the member;
//   - with -check-config: "<name>: configuration ok", and no listener, file, key or
//     store is opened;
//   - else Build (whose errors, of what it opens, are not located); the pprof listener when debug.pprof_listen names a loopback address
//     (pprof.go: net/http/pprof on that address alone, never on the service's
//     listener; off by default); the "<name> started" log line, the development warning and banner
//     when the binary runs a development configuration (Banner), "<name> listening on
//     <url> ..." on stdout (all of it at debug instead when Program.Announced: the
//     caller, `dialogtrust dev` in a terminal, says it), and serving until SIGTERM or
//     SIGINT;
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
// The operational routes (/healthz, /readyz, /metrics, the JWKS) are package
// internal/service's, which package tts and package witissuer mount too.
//
// It implements no spec section.
package kit
