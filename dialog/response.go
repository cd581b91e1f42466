package dialog

import (
	"bytes"
	"net/http"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/problem"
)

// signedResponse holds a handler's response until it is signed: the signature covers
// the status, the fields and the body's digest, all of which must be final first
// (http-signature-07 section 3.5, RFC 9421). It has no Flush: a handler that asks
// whether it can stream learns that it cannot.
//
// A body over MaxSignedResponseBody cannot be signed, and so is never sent: the first
// write over the bound answers the client at once with response_not_signable (501,
// the draft's answer when a signature is required but impossible), and every write
// after it fails, so that the handler stops. An unsigned success never goes out.
type signedResponse struct {
	w      http.ResponseWriter // the connection's writer
	header http.Header
	status int
	body   bytes.Buffer
	// refused is the error the client was answered with once the body passed the
	// bound (nil until then).
	refused error
	// mayPass: the receiver streams unsigned (WithStreamingUnsigned) and the client
	// did not ask for a signed response, so an event stream goes out as it is written.
	mayPass bool
	// passing: the response is an event stream going out unsigned, as it is written.
	passing bool
	// dialogContext is the verified Dialog-Context value echoed ("" without one).
	dialogContext string
}

func (b *signedResponse) Header() http.Header { return b.header }

func (b *signedResponse) WriteHeader(status int) {
	if b.status != 0 {
		return
	}
	b.status = status
	if b.mayPass && hostproto.IsEventStream(b.header) {
		b.pass()
	}
}

func (b *signedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.WriteHeader(http.StatusOK)
	}
	switch {
	case b.passing:
		return b.w.Write(p)
	case b.refused != nil:
		return 0, b.refused
	case b.body.Len()+len(p) > MaxSignedResponseBody:
		b.refused = errcode.Wrap(errcode.ResponseNotSignable, errcode.New(errcode.BodyTooLarge, "response over %d octets", MaxSignedResponseBody),
			"the response is over %d octets and cannot be signed", MaxSignedResponseBody)
		problem.Write(b.w, b.refused)
		return 0, b.refused
	}
	return b.body.Write(p)
}

// pass sends the fields and the status, with the verified Dialog-Context echoed as in
// any unsigned response (section 7's coverage rule is a signed response's), and from
// then on every write goes to the connection as it comes.
func (b *signedResponse) pass() {
	b.passing = true
	h := b.w.Header()
	for k, v := range b.header {
		h[k] = v
	}
	if b.dialogContext != "" {
		h.Set(HeaderName, b.dialogContext)
	}
	b.header = h
	b.w.WriteHeader(b.status)
}

// passes reports whether a response with fields h goes out unsigned, as it is written.
func (b *signedResponse) passes(h http.Header) bool { return b.mayPass && hostproto.IsEventStream(h) }

// streamableResponse is the writer of a receiver that streams unsigned
// (WithStreamingUnsigned) to a request that did not ask for a signed response: a
// signedResponse that flushes an event stream as it goes and holds anything else,
// for which Flush does nothing until the handler has ended and the response is signed.
// It carries the connection's deadlines (http.ResponseController), which a stream
// moves write by write, but no Unwrap: nothing reaches the connection around it.
type streamableResponse struct{ *signedResponse }

func (s streamableResponse) Flush() { _ = s.FlushError() }

func (s streamableResponse) FlushError() error {
	if s.status == 0 {
		if !hostproto.IsEventStream(s.header) {
			return nil // held: a flush before anything is written changes nothing
		}
		s.WriteHeader(http.StatusOK)
	}
	if !s.passing {
		return nil
	}
	return http.NewResponseController(s.w).Flush()
}

func (s streamableResponse) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(s.w).SetWriteDeadline(t)
}

func (s streamableResponse) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(s.w).SetReadDeadline(t)
}

// HoldsResponse reports whether w, the writer a Receiver's Middleware hands its handler
// (or one that wraps it: Unwrap is followed), holds a response with fields h to sign it
// once the handler has ended, within MaxSignedResponseBody. It holds every response to
// an HTTP-signed request when the receiver has a response signer, but an event stream
// to a request that did not ask for a signed response, with WithStreamingUnsigned. A
// proxy in front of a handler asks it to know whether a response can stream.
func HoldsResponse(w http.ResponseWriter, h http.Header) bool {
	for {
		switch s := w.(type) {
		case *signedResponse:
			return true
		case streamableResponse:
			return !s.passes(h)
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}
