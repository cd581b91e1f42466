// Package cmdutil holds what the service binaries (cmd/wit-issuer, cmd/tts) share on
// their store section. The rest of what they share (configuration loading,
// -check-config, logging, serving) is the service runner, internal/service. Only cmd/
// imports it.
//
// It implements no spec section.
package cmdutil
