// Command wit-issuer runs a trust domain's WIT issuer (package witissuer): every
// workload gets its Workload Identity Token here before it calls anyone
// (draft-ietf-wimse-workload-creds-02 section 5.1; wimse.md sections 1-2).
//
// This command is only the face of the library: it reads the YAML configuration
// (strict: an unknown member is an error), applies DIALOGTRUST_WIT_ISSUER_* environment
// overrides and then flags, opens the signing keys (a file, a data directory where they
// are generated at first start and kept across restarts and rotations, or memory),
// opens the replay store, listens, logs JSON through log/slog, reloads trust bundles and
// the serving certificate when their files change, steps key rotation, and shuts down
// gracefully on SIGINT or SIGTERM.
//
// Run with no arguments it uses the embedded development configuration
// (cmd/internal/witissuerservice/default.yaml): plain HTTP on 127.0.0.1:8080, trust
// domain dev.local, an in-memory replay store, a generated key, and only the dev
// method, which authenticates nobody; it says so loudly at start and on every issuance.
// The dev method refuses to listen on anything but loopback unless
// auth.dev.allow_non_loopback is set.
//
// Usage:
//
//	wit-issuer [--config FILE] [--listen ADDR] [--issuer ID] [--public-url URL]
//	           [--data-dir DIR | --signing-key-file FILE] [--store memory|redis]
//	           [--redis-addrs A,B] [--log-level LEVEL]
package main
