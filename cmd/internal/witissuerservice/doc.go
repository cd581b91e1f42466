// Package witissuerservice is the program of command wit-issuer (cmd/wit-issuer
// documents it): its configuration (the embedded development default, the file format,
// the environment overrides and flags), the checks -check-config makes, and Build,
// which turns a configuration into the server that the service runner (cmd/internal/kit) runs: the WIT
// issuer (package witissuer) with its authentication methods, trust bundle and
// certificate reloads, key rotation and the replay store.
//
// It is a package of its own, not command wit-issuer's main, so that two commands run
// the same issuer: cmd/wit-issuer, and `dialogtrust dev`, which runs it beside the TTS
// in one process. Only cmd/ imports it.
package witissuerservice
