package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// The wait for an upstream's answer, the egress's for the route's upstream and the
// ingress's for the application: how long (upstreamWaitOf), bounded and kept past the
// server's write deadline (upstreamWait), and what a failed exchange is answered with
// (upstreamError).

// upstreamError keeps the code of a rejection (the agent package's, the TTS's, the
// WIT issuer's) and names a failure without one as upstream_unavailable.
func upstreamError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	if errcode.CodeOf(err) != errcode.Unmapped {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream exchange ended early")
	}
	return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream could not be reached")
}

// DefaultUpstreamTimeout is the default of EgressConfig.UpstreamTimeout and
// IngressConfig.UpstreamTimeout: how long the proxy waits for its upstream's answer, its
// response header and, for a response read whole, its body. Agent workloads answer
// slowly: an LLM-backed MCP tool or an A2A agent answering message/send blocking often
// takes a minute or more, and the agents' SDKs wait at least that long themselves (the
// TypeScript MCP SDK 60 s by default, longer with progress). Five minutes lets such a
// call through while the agent's own timeout, normally shorter, decides, and still
// frees the request, its connection and the application's work within minutes when an
// upstream hangs. It is DefaultStreamIdleTimeout too: a streamed answer may be silent
// as long as one read whole may take to come.
const DefaultUpstreamTimeout = 5 * time.Minute

// answerWriteTimeout is the time the proxy's write deadline leaves for writing an
// answer once the upstream's is in, or once the wait for it ran out: as long as package
// httpserver's WriteTimeout gives a whole exchange.
const answerWriteTimeout = 30 * time.Second

// sideWaits reads the two waits of one side of the proxy ("egress" or "ingress"):
// how long a streamed answer may stay silent, and how long its upstreams may take.
func sideWaits(streamIdle, upstream time.Duration, log *slog.Logger, side string) (streamer, time.Duration, error) {
	stream, err := newStreamer(streamIdle, log, side)
	if err != nil {
		return streamer{}, 0, err
	}
	wait, err := upstreamWaitOf(upstream, DefaultUpstreamTimeout, side)
	if err != nil {
		return streamer{}, 0, err
	}
	return stream, wait, nil
}

// upstreamWaitOf is the wait a configuration gives: d, def when d is 0; negative is
// refused.
func upstreamWaitOf(d, def time.Duration, what string) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, errcode.New(errcode.InvalidRequest, "%s: the upstream timeout must not be negative", what)
	case d == 0:
		return def, nil
	}
	return d, nil
}

// upstreamWait bounds one request's wait for its upstream's answer and keeps the
// proxy's own write deadline past it. The server's WriteTimeout (httpserver's, from the
// end of the request headers to the end of the response) would otherwise cut off every
// upstream slower than it, and, were the wait as long, close the connection at the
// moment the wait runs out, so that the client got a reset instead of
// upstream_unavailable. The read deadline stays: the request is read whole before the
// wait starts.
type upstreamWait struct {
	wait    time.Duration // the wait given: the configured one, or less to the request's deadline
	timer   *time.Timer
	reqCtx  context.Context
	rc      *http.ResponseController
	inTime  bool // ended before it ran out
	stopped bool
}

// waitUpstream starts the wait for r's upstream: limit, or up to r's own deadline when
// that comes first. When it runs out, cancel ends the exchange. rc's write deadline
// moves to the end of the wait and answerWriteTimeout after it.
func waitUpstream(rc *http.ResponseController, r *http.Request, limit time.Duration, cancel context.CancelFunc) *upstreamWait {
	now := time.Now()
	end := now.Add(limit)
	if dl, ok := r.Context().Deadline(); ok && dl.Before(end) {
		end = dl
	}
	uw := &upstreamWait{wait: end.Sub(now), reqCtx: r.Context(), rc: rc}
	// A writer that cannot move it (none of the proxies' own) keeps the server's.
	_ = rc.SetWriteDeadline(end.Add(answerWriteTimeout))
	uw.timer = time.AfterFunc(uw.wait, cancel)
	return uw
}

// end ends the wait, and reports whether it ended before it ran out.
func (uw *upstreamWait) end() bool {
	if !uw.stopped {
		uw.stopped = true
		uw.inTime = uw.timer.Stop()
	}
	return uw.inTime
}

// answered ends the wait with the upstream's answer in hand, and leaves
// answerWriteTimeout to write it; the wait's error when it ran out first (the exchange
// was canceled then).
func (uw *upstreamWait) answered() error {
	if !uw.end() {
		return uw.ranOut(nil)
	}
	_ = uw.rc.SetWriteDeadline(time.Now().Add(answerWriteTimeout))
	return nil
}

// refusal ends the wait and gives the error to answer for err, a failure of the
// exchange: upstream_unavailable saying the wait ran out when it did (err is then its
// consequence), else err. A failure with a code of its own, a token service's that the
// egress was waiting for when the wait ran out (tts_unavailable, as_unavailable), keeps
// it: it names what did not answer.
func (uw *upstreamWait) refusal(err error) error {
	ranOut := !uw.end() || errors.Is(uw.reqCtx.Err(), context.DeadlineExceeded)
	if code := errcode.CodeOf(err); ranOut && (code == errcode.Unmapped || code == errcode.UpstreamUnavailable) {
		return uw.ranOut(err)
	}
	return err
}

func (uw *upstreamWait) ranOut(err error) error {
	return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream exchange did not complete within %s", uw.wait.Round(time.Millisecond))
}
