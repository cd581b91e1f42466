// Package graceful stops an HTTP/1.1 server without failing requests that were already
// sent to it.
//
// Everything is in graceful.go.
//
// http.Server.Shutdown closes the listener and every idle connection at once. A
// kept-alive connection counts as idle from the moment its last response is written
// until the server has read the first bytes of the next request, so on a busy server a
// request the client sent just before the signal, still unread in the socket buffer, is
// lost: the client sees EOF or a reset for a request that was in flight. The fault
// tests (internal/faulttest, SIGTERM under load) saw this on both services.
//
// A Drainer puts a short drain before Shutdown. During the drain the server keeps
// accepting and serving, but every response carries "Connection: close", so each
// connection is closed right after the answer to the request its client had already
// sent, and the client opens a new connection for its next one. When the drain ends
// (after its duration, or as soon as no connection is open), Shutdown closes the
// listener, so new connections are refused, and finds only connections that were idle
// for the whole drain: whatever is sent on them from then on was sent after the signal.
//
// The close it relies on is HTTP/1.1's "close" connection option (RFC 9112 section
// 9.6); it implements no spec section of this project.
package graceful
