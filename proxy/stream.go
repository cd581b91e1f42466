package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
)

// A response passes through the proxies as it comes, unless something must be computed
// over its whole body first (docs/proxy.md, "Streamed responses"): an MCP Streamable
// HTTP GET stream, the progress notifications of a long tool call answered as
// text/event-stream, and A2A message/stream, SendStreamingMessage and tasks/resubscribe
// events reach the agent event by event. What decides is what the request and the
// route need, not the content type:
//
//   - a signed response (the client's wimse-sign-response, a route's
//     RequireSignedResponse, an ingress whose receiver signs every response to an
//     HTTP-signed request, but with dialog.WithStreamingUnsigned the event streams
//     nobody asked to have signed): the signature covers Content-Digest, so the body
//     (http-signature-07 section 3.5, RFC 9421);
//   - the reply to a handoff offer: the delegate's status is placed in it and verified
//     from it (handoff-context section 5.6);
//   - a cancel (section 6), answered as it is today;
//
// are read whole within MaxBody as before. Every other response is copied as it is
// read, flushed after each read, with no bound on its total size but an idle bound
// between two reads (StreamIdleTimeout). An unsigned stream is exactly as trustworthy
// as an unsigned JSON reply: what protects either is the transport between the proxies,
// and nothing the proxy promised to verify passes unverified.

// DefaultStreamIdleTimeout is the default of EgressConfig.StreamIdleTimeout and
// IngressConfig.StreamIdleTimeout: how long a response passed through as it comes may
// send nothing before the proxy ends it. An event stream that stays quiet longer sends
// a comment line now and then, as servers do to keep intermediaries from closing it.
const DefaultStreamIdleTimeout = 5 * time.Minute

// streamWriteTimeout bounds each write of a passed-through response to the client. The
// server's write deadline (httpserver.WriteTimeout) covers a whole response and is
// moved for a stream, write by write, so a client that stops reading is still cut off.
const streamWriteTimeout = 30 * time.Second

// streamBuffer is the size of the reads a passed-through response is copied in; the
// buffers are kept for the next response.
const streamBuffer = 32 << 10

var streamBuffers = sync.Pool{New: func() any { b := make([]byte, streamBuffer); return &b }}

// streamer passes responses through as they come, for one side of the proxy.
type streamer struct {
	idle time.Duration
	log  *slog.Logger
	side string // "egress" or "ingress", in the log
}

func newStreamer(idle time.Duration, log *slog.Logger, side string) (streamer, error) {
	switch {
	case idle < 0:
		return streamer{}, errcode.New(errcode.InvalidRequest, "%s: the stream idle timeout must not be negative", side)
	case idle == 0:
		idle = DefaultStreamIdleTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return streamer{idle: idle, log: log, side: side}, nil
}

// canStream reports whether a response with fields h can go to w as it comes: w
// flushes (canFlush), and the receiver's writer does not hold this response to sign it
// (dialog.HoldsResponse: with dialog.WithStreamingUnsigned it passes an event stream to
// a request that did not ask for a signed response, and signs anything else, which the
// ingress then reads whole within MaxBody as before).
func canStream(w http.ResponseWriter, h http.Header) bool {
	return canFlush(w) && !dialog.HoldsResponse(w, h)
}

// canFlush reports whether w reaches the connection with a flush: w or a writer it
// wraps (Unwrap, as http.ResponseController follows it) flushes. A writer that holds
// the response, such as dialog.Receiver's while it signs one, does not: the response is
// then read whole.
func canFlush(w http.ResponseWriter) bool {
	for {
		switch w.(type) {
		case interface{ FlushError() error }, http.Flusher:
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// pass sends res to w as it comes: the fields (but the connection's own) and the status
// at once (with the first read when the body's length is known), then each read of the
// body, flushed. cancel ends the exchange with the upstream; pass calls it when the
// idle bound fires, and the caller's deferred call ends it when the client goes away
// (the request's context ends with the client, and the upstream's with it). A response that breaks off after its header has gone out
// cannot be answered with a problem document any more: it is ended abnormally
// (http.ErrAbortHandler, so that no client takes the part it got for the whole) and the
// reason, with its stable code, goes to the log.
func (s streamer) pass(w http.ResponseWriter, r *http.Request, res *http.Response, cancel context.CancelFunc) {
	copyResponseHeader(w, res)
	if res.ContentLength >= 0 && (res.Request == nil || res.Request.Method != http.MethodHead) {
		w.Header().Set("Content-Length", strconv.FormatInt(res.ContentLength, 10))
	}
	rc := http.NewResponseController(w)
	// The request is read whole before it is forwarded: its read deadline has no use
	// for the rest of the exchange and is lifted (net/http's HTTP/1 server lifts it
	// itself for its watch of the idle connection). The write deadline covers a whole
	// response (an HTTP/2 stream is reset when it passes) and moves with each write.
	// The next request on the connection gets the server's deadlines again.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	w.WriteHeader(res.StatusCode)
	if res.ContentLength < 0 && rc.Flush() != nil {
		// A body of unknown length, such as an event stream, may send nothing for a
		// while: the client sees the response at once. A body of known length goes out
		// with its header at the first read.
		return // the client is gone
	}
	var idle atomic.Bool
	timer := time.AfterFunc(s.idle, func() {
		idle.Store(true)
		cancel()
	})
	defer timer.Stop()
	bp := streamBuffers.Get().(*[]byte)
	defer streamBuffers.Put(bp)
	buf := *bp
	for {
		n, err := res.Body.Read(buf)
		timer.Stop()
		if n > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client is gone or stopped reading
			}
			if rc.Flush() != nil {
				return
			}
		}
		switch {
		case err == io.EOF:
			return
		case err == nil:
			timer.Reset(s.idle)
			continue
		case idle.Load():
			err = errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream's response sent nothing for %s", s.idle)
		case r.Context().Err() != nil:
			return // the client went away: nothing to tell it
		default:
			err = errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream's response broke off")
		}
		s.log.Warn("response ended early", "side", s.side, "code", string(errcode.CodeOf(err)), "kind", errcode.KindOf(err).String(), "error", err.Error())
		panic(http.ErrAbortHandler)
	}
}
