// Package cmdutil holds what the service binaries (cmd/wit-issuer, cmd/tts) share on
// their configuration's keys, tls and store sections, and the glue of their build
// (the replay store opened on the server, the key rotation loop). The rest of what
// they share (configuration loading, -check-config, logging, serving) is the service
// runner, internal/service. Only cmd/ imports it.
//
// It implements no spec section.
package kit
