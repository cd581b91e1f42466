// Package httpbody reads an HTTP body that a peer or the caller chose, up to a bound:
// the one way the receivers, the proxy, the admin API, the agent's transport and the
// adapters read a whole request body before they look into it. More than the bound is
// errcode.BodyTooLarge, a body that breaks off is errcode.InvalidRequest; both are
// failed checks of what the sender sent. Read read.go.
package httpbody
