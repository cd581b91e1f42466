// Command tts is the Transaction Token Service of a trust domain: package tts behind a
// configuration file, environment overrides, flags, listeners and a graceful shutdown.
// docs/operator.md ("TTS configuration") documents every option.
//
//	go run ./cmd/tts                    # the embedded development default
//	go run ./cmd/tts --config tts.yaml  # anything real
//
// Only the commands read flags, files and environment; the libraries take options (the
// layers of docs/library.md, "Architecture"). The program is cmd/internal/ttsservice,
// which `dialogtrust dev` runs in its process too. Configuration layers: the embedded
// default (cmd/internal/ttsservice/default.yaml) or the file named by --config or
// DIALOGTRUST_TTS_CONFIG, decoded strictly so that a misspelt option is an error; then
// DIALOGTRUST_TTS_* variables; then flags.
//
// Why it is built this way:
//
//   - Development mode is explicit (development: true): only then may the signing key
//     be generated at start, and then the listener must be loopback and the start says
//     loudly what is not trustworthy. Outside it a key file or a data directory is
//     required, so that a restart does not silently invalidate every token in flight.
//   - WIT issuer keys and subject token issuer keys given by URL are fetched lazily
//     (keys.LazyRemoteSet): services can start in any order, and until a JWKS answers
//     every check that needs it is "could not be completed" (503, keys_unavailable),
//     never an acceptance; /readyz says so too.
//   - Keys in a data directory are written atomically with mode 0600 and rotated
//     publish-before-use by keys.Rotator.
//   - Logs are JSON (slog) on stderr; tokens appear only as SHA-256 hashes.
//   - Identity chaining (the chaining section, off by default) runs in the same binary
//     at the same token endpoint (tts.Config.Grants): it hands token exchanges for a JWT
//     authorization grant to AS A and jwt-bearer grants to AS B, which sign with the
//     TTS's key ring and authenticate with its WIT methods only (grants and access
//     tokens are bound to the client's WIT key). When AS B is on, the TTS accepts the
//     access tokens of its own AS B as subject tokens. The section is checked before
//     anything opens (also by --check-config); peers' keys given by URL or metadata
//     are fetched lazily, like the WIT issuers'.
package main
