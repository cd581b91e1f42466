// Package loopback says whether a URL's host stays on this machine: localhost or a
// loopback IP literal. Where plain HTTP is allowed only to the local machine (a
// protected resource's metadata URL in dialog, a proxy route's upstream, an AuthZEN PDP
// in cmd/internal/kit) the check is this one.
//
// Everything is in loopback.go.
package loopback
