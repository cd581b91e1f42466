// Package reqid gives each request handled by a service an identifier for its log
// lines: the caller's X-Request-Id when it is well formed (so that a request can be
// followed across services), else a fresh random one. The identifier is echoed in the
// response's X-Request-Id. It is never a credential and never derived from one.
//
// Everything is in reqid.go.
//
// It implements no spec section.
package reqid
