// Package testkit builds the credentials tests need: an issuer with trust configuration,
// workloads with keys and WITs, and a settable clock; and the small pieces several
// packages' tests share (a buffer safe for a server's goroutines, the handler-and-floor
// benchmark loop, the runners of the proxy examples of examples/proxy in examples.go, a
// clone of HEAD and the wait for a process group to end in clone.go).
// Tests only; nothing here is a fake of a credential: every token is really signed and
// really verified.
//
// Read testkit.go first (Domain, Workload, Clock), then rsa.go and http.go.
//
// It implements no spec section.
package testkit
