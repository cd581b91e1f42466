package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// streamWait bounds every wait of these tests for the other side: a proxy that reads a
// stream whole keeps the agent waiting for an event the application sends only after
// the agent read the one before, and the test fails instead of hanging.
const streamWait = 20 * time.Second

// newStreamPair is a pair through which responses can stream: the ingress signs none,
// the route requires none, and the egress uses its own transport (the harness's hop
// reads every answer whole). more changes the options further.
func newStreamPair(t *testing.T, method proof.Method, app func(w http.ResponseWriter, r *http.Request, body []byte), more func(o *pairOptions)) *pair {
	o := pairOptions{method: method, unsignedOK: true, unsignedResponses: true, app: app,
		egress: func(c *proxy.EgressConfig) { c.Base = nil }}
	if more != nil {
		more(&o)
	}
	return newPair(t, o)
}

// agentClient is the local agent's HTTP client, with a transport of its own.
func agentClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// open sends the agent's request and returns the response with its body unread; cancel
// ends the request (the agent going away).
func open(t *testing.T, c *http.Client, method, url, body string, h http.Header) (*http.Response, *bufio.Reader, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamWait)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	mustOK(t, err)
	if body == "" {
		req.Body = http.NoBody
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := c.Do(req)
	mustOK(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res, bufio.NewReader(res.Body), cancel
}

// flush sends what the application wrote so far.
func flush(w http.ResponseWriter) { w.(http.Flusher).Flush() }

// onSide configures one side of the pair, "egress" or "ingress": set gets that side's
// stream idle timeout, upstream timeout and logger.
func onSide(side string, set func(streamIdle, upstream *time.Duration, log **slog.Logger)) func(*pairOptions) {
	return func(o *pairOptions) {
		egress := o.egress
		o.egress = func(c *proxy.EgressConfig) {
			egress(c)
			if side == "egress" {
				set(&c.StreamIdleTimeout, &c.UpstreamTimeout, &c.Log)
			}
		}
		o.ingress = func(c *proxy.IngressConfig) {
			if side == "ingress" {
				set(&c.StreamIdleTimeout, &c.UpstreamTimeout, &c.Log)
			}
		}
	}
}

// eventThenEvent is an application's two-event answer: first, flushed, and second once
// the agent has read the first (read1 closed); nothing more when the request ends first.
func eventThenEvent(w http.ResponseWriter, r *http.Request, first string, read1 <-chan struct{}, second string) {
	_, _ = io.WriteString(w, first)
	flush(w)
	select {
	case <-read1:
	case <-r.Context().Done():
		return
	}
	_, _ = io.WriteString(w, second)
	flush(w)
}

// waitFor waits for ch to be closed or to give a value, at most streamWait.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(streamWait):
		t.Fatalf("waited %s for %s", streamWait, what)
		var zero T
		return zero
	}
}

func eventStreamFields() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
}

// An MCP tools/call answered as text/event-stream (the TypeScript SDK's default): the
// progress notification reaches the agent while the application is still working on
// the call, which it ends only once the test has read that event; the Dialog-Context
// comes back as with a JSON reply, and the stream is not read whole (no length).
func TestStreamEventsReachTheAgentBeforeTheStreamEnds(t *testing.T) {
	for _, method := range []proof.Method{proof.HTTPSig, proof.WPT} {
		t.Run(method.String(), func(t *testing.T) {
			read1 := make(chan struct{})
			p := newStreamPair(t, method, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				w.Header().Set("Content-Type", "text/event-stream")
				eventThenEvent(w, r, mcpProgress, read1, mcpSSEReply)
			}, nil)
			res, br, _ := open(t, agentClient(t), "POST", p.egress.URL+"/t1", toolsCall, merge(eventStreamFields(), start()))
			if res.StatusCode != 200 || res.ContentLength != -1 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d length %d %v", res.StatusCode, res.ContentLength, res.Header)
			}
			dc, err := dialog.FromHeader(res.Header)
			if err != nil || dc == nil || !dc.Initiator().Equal(p.a1) {
				t.Fatalf("no Dialog-Context of a1 in %v (%v)", res.Header, err)
			}
			if got := testkit.ReadEvent(t, br); got != mcpProgress {
				t.Fatalf("event 1: %q", got)
			}
			close(read1)
			rest, err := io.ReadAll(br)
			if err != nil || string(rest) != mcpSSEReply {
				t.Fatalf("the rest of the stream: %q (%v)", rest, err)
			}
			if r := p.app.last(); r.Header.Get(proxy.VerifiedSenderField) != p.a1.String() || r.Header.Get(proxy.VerifiedDialogField) != dc.DLG() {
				t.Fatalf("the application was told %v", r.Header)
			}
		})
	}
}

func merge(hs ...http.Header) http.Header {
	out := http.Header{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}

// The MCP Streamable HTTP transport's GET stream (server-to-client messages) in a
// session: initialize over POST gives the Mcp-Session-Id, and the GET with it stays
// open, each notification reaching the agent when the server sends it, until the agent
// goes away, which ends the application's request too.
func TestStreamMCPSessionGETStream(t *testing.T) {
	const (
		initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a1","version":"1"}}}`
		listChanged = "event: message\nid: n1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
		logMessage  = "event: message\nid: n2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"ready\"}}\n\n"
	)
	read1, gone := make(chan struct{}), make(chan struct{})
	p := newStreamPair(t, proof.HTTPSig, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch {
		case r.Method == "POST":
			w.Header().Set("Mcp-Session-Id", "s-1")
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"t1","version":"1"}}}`)
		case r.Method == "GET" && r.Header.Get("Mcp-Session-Id") == "s-1" && strings.Contains(r.Header.Get("Accept"), "text/event-stream"):
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			flush(w) // the stream is open before there is anything to send
			eventThenEvent(w, r, listChanged, read1, logMessage)
			<-r.Context().Done()
			close(gone)
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	}, func(o *pairOptions) { o.stateful = true })
	c := agentClient(t)
	res, br, _ := open(t, c, "POST", p.egress.URL+"/t1", initialize, merge(eventStreamFields(), start()))
	body, err := io.ReadAll(br)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Mcp-Session-Id") != "s-1" || res.ContentLength != int64(len(body)) {
		t.Fatalf("initialize: %d %v %s (%v)", res.StatusCode, res.Header, body, err)
	}
	dc, err := dialog.FromHeader(res.Header)
	mustOK(t, err)
	res, br, cancel := open(t, c, "GET", p.egress.URL+"/t1", "", http.Header{
		dialog.HeaderName: {dc.Value()}, "Mcp-Session-Id": {"s-1"}, "Accept": {"text/event-stream"}})
	if res.StatusCode != 200 || res.Header.Get(dialog.HeaderName) != dc.Value() {
		t.Fatalf("GET: %d %v", res.StatusCode, res.Header)
	}
	if got := testkit.ReadEvent(t, br); got != listChanged {
		t.Fatalf("notification 1: %q", got)
	}
	close(read1)
	if got := testkit.ReadEvent(t, br); got != logMessage {
		t.Fatalf("notification 2: %q", got)
	}
	if r := p.app.last(); r.Method != "GET" || r.Header.Get(proxy.VerifiedDialogField) != dc.DLG() || r.Header.Get(proxy.VerifiedEstablishedField) != "false" {
		t.Fatalf("the GET reached the application as %s %v", r.Method, r.Header)
	}
	cancel()
	waitFor(t, gone, "the application's request to end with the agent's")
}

// The agent going away in the middle of a stream ends the exchange at each hop: the
// application's request context is canceled.
func TestStreamAgentGoingAwayCancelsTheApplication(t *testing.T) {
	for _, method := range []proof.Method{proof.HTTPSig, proof.WPT} {
		t.Run(method.String(), func(t *testing.T) {
			gone := make(chan error, 1)
			p := newStreamPair(t, method, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, mcpProgress)
				flush(w)
				<-r.Context().Done()
				gone <- r.Context().Err()
			}, nil)
			_, br, cancel := open(t, agentClient(t), "POST", p.egress.URL+"/t1", toolsCall, merge(eventStreamFields(), start()))
			if got := testkit.ReadEvent(t, br); got != mcpProgress {
				t.Fatalf("event 1: %q", got)
			}
			cancel()
			if err := waitFor(t, gone, "the application's request to end"); !errors.Is(err, context.Canceled) {
				t.Fatalf("the application's context ended with %v", err)
			}
		})
	}
}

// http-signature-07 section 3.5 with RFC 9421: a route that requires a signed
// response gets the whole body, signed by the ingress over its Content-Digest and
// verified at the egress, even when the application streams it; the agent gets it
// with its length, once the application has ended it.
func TestStreamSection3_5SignedResponseIsReadWhole(t *testing.T) {
	flushed, release := make(chan struct{}), make(chan struct{})
	var signed string
	p := newPair(t, pairOptions{
		app: func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, mcpProgress)
			flush(w)
			close(flushed)
			<-release
			_, _ = io.WriteString(w, mcpSSEReply)
		},
		egress: func(c *proxy.EgressConfig) {
			c.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
				res, err := http.DefaultTransport.RoundTrip(r)
				if err == nil {
					signed = res.Header.Get("Signature-Input")
				}
				return res, err
			})
		},
	})
	type answer struct {
		res  *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	req, err := http.NewRequest("POST", p.egress.URL+"/t1", strings.NewReader(toolsCall))
	mustOK(t, err)
	req.Header = merge(eventStreamFields(), start())
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		done <- answer{res, body, err}
	}()
	waitFor(t, flushed, "the application's first event")
	close(release)
	a := waitFor(t, done, "the agent's answer")
	mustOK(t, a.err)
	if a.res.StatusCode != 200 || string(a.body) != mcpProgress+mcpSSEReply || a.res.ContentLength != int64(len(a.body)) {
		t.Fatalf("%d length %d %q", a.res.StatusCode, a.res.ContentLength, a.body)
	}
	if !strings.Contains(signed, "content-digest") || !strings.Contains(signed, "wimse-req-nonce") {
		t.Fatalf("the ingress's answer is not signed over its digest: %q", signed)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Handoff-context section 5.6 with section 6: the reply to an offer is read whole at
// both proxies even where nothing else would be (no response signature asked for or
// made), because the ingress places the delegate's status in it and the egress
// verifies it from it.
func TestStreamSection5_6HandoffReplyIsReadWholeAndSigned(t *testing.T) {
	stream := mcpProgress + mcpSSEReply
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: sseApp(stream, "completed"), streams: true})
	res, body := hp.send(t, toolsCall, nil)
	if res.StatusCode != 200 || res.Header.Get(proxy.HandoffStatusField) != "completed" || res.ContentLength != int64(len(body)) {
		t.Fatalf("%d %v length %d %s", res.StatusCode, res.Header, res.ContentLength, body)
	}
	got := sseEvents(body)
	if len(got) != 2 || got[0] != mcpProgress {
		t.Fatalf("the stream changed: %q", body)
	}
	if vs := hp.status(t, sseData(got[1])); vs.State != handoff.StateCompleted || vs.Hop != res.Header.Get(proxy.HandoffHopField) {
		t.Fatalf("status %+v", vs.Status)
	}
}

func newJSONLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

// logSink takes the JSON log lines of a proxy and hands each on.
type logSink chan string

func (l logSink) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default: // a test reads the first lines only
	}
	return len(p), nil
}

// A passed-through response that sends nothing for the idle bound is ended: the agent
// sees the stream break off (not end), the application's request is canceled, and the
// side whose bound fired logs upstream_unavailable.
func TestStreamIdleBound(t *testing.T) {
	for _, side := range []string{"ingress", "egress"} {
		t.Run(side, func(t *testing.T) {
			gone := make(chan struct{})
			logs := make(logSink, 8)
			log := newJSONLogger(logs)
			p := newStreamPair(t, proof.HTTPSig, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, mcpProgress)
				flush(w)
				<-r.Context().Done()
				close(gone)
			}, onSide(side, func(idle, _ *time.Duration, l **slog.Logger) {
				*idle, *l = 50*time.Millisecond, log
			}))
			_, br, _ := open(t, agentClient(t), "POST", p.egress.URL+"/t1", toolsCall, merge(eventStreamFields(), start()))
			if got := testkit.ReadEvent(t, br); got != mcpProgress {
				t.Fatalf("event 1: %q", got)
			}
			if rest, err := io.ReadAll(br); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("the stream ended with %q (%v), not broken off", rest, err)
			}
			line := waitFor(t, (<-chan string)(logs), "the log line")
			if !strings.Contains(line, `"code":"upstream_unavailable"`) || !strings.Contains(line, `"side":"`+side+`"`) || !strings.Contains(line, "sent nothing for 50ms") {
				t.Fatalf("log: %s", line)
			}
			waitFor(t, gone, "the application's request to end")
		})
	}
}

// The bound before a stream starts: an upstream that sends no response header is cut
// off by the upstream timeout of the side waiting for it, with upstream_unavailable,
// and the application's request ends.
func TestStreamHeaderTimeoutsStillApply(t *testing.T) {
	for _, side := range []string{"ingress", "egress"} {
		t.Run(side, func(t *testing.T) {
			gone := make(chan struct{})
			p := newStreamPair(t, proof.HTTPSig, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				<-r.Context().Done()
				close(gone)
			}, onSide(side, func(_, upstream *time.Duration, _ **slog.Logger) {
				*upstream = 50 * time.Millisecond
			}))
			res, body := send(t, p.egress.URL+"/t1", toolsCall, eventStreamFields(), start())
			if res.StatusCode != http.StatusServiceUnavailable || codeOf(res.StatusCode, body) != errcode.UpstreamUnavailable {
				t.Fatalf("%d %s", res.StatusCode, body)
			}
			waitFor(t, gone, "the application's request to end")
		})
	}
}

// deadlineConn records the deadlines the server sets on a connection.
type deadlineConn struct {
	net.Conn
	mu          sync.Mutex
	read, write time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.read = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.write = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *deadlineConn) deadlines() (read, write time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read, c.write
}

type deadlineListener struct {
	net.Listener
	conns chan *deadlineConn
}

func (l deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &deadlineConn{Conn: c}
	l.conns <- dc
	return dc, nil
}

// The server's read and write timeouts (package httpserver's, here shortened to a
// second) would end a stream that lasts longer; for a passed-through response the
// egress moves the write deadline past the server's, write by write, and no read
// deadline is left (the request is read whole).
func TestStreamLiftsTheServerDeadlines(t *testing.T) {
	read1 := make(chan struct{})
	p := newStreamPair(t, proof.WPT, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		eventThenEvent(w, r, mcpProgress, read1, mcpSSEReply)
	}, nil)
	srv := httptest.NewUnstartedServer(p.egress.Config.Handler)
	ln := deadlineListener{Listener: srv.Listener, conns: make(chan *deadlineConn, 4)}
	srv.Listener = ln
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = time.Second, time.Second
	httpserver.SetDefaults(srv.Config)
	srv.Start()
	t.Cleanup(srv.Close)
	sent := time.Now()
	_, br, _ := open(t, agentClient(t), "POST", srv.URL+"/t1", toolsCall, merge(eventStreamFields(), start()))
	if got := testkit.ReadEvent(t, br); got != mcpProgress {
		t.Fatalf("event 1: %q", got)
	}
	conn := waitFor(t, (<-chan *deadlineConn)(ln.conns), "the agent's connection")
	// The server's own write deadline is a second after the request; the stream's is
	// the time of its last write and a bound of tens of seconds.
	read, write := conn.deadlines()
	if !read.IsZero() || !write.After(sent.Add(10*srv.Config.WriteTimeout)) {
		t.Fatalf("during the stream: read deadline %v, write deadline %v (sent at %v)", read, write, sent)
	}
	close(read1)
	if rest, err := io.ReadAll(br); err != nil || string(rest) != mcpSSEReply {
		t.Fatalf("the rest: %q (%v)", rest, err)
	}
}

// The same over HTTP/2 between the proxies (the ingress on TLS, as it faces remote
// callers): the first event reaches the agent before the application sends the second,
// and the agent going away then cancels the application's request; with the idle
// bound at the ingress, the HTTP/2 stream is reset and the agent's stream breaks off.
func TestStreamOverHTTP2(t *testing.T) {
	t.Run("events and going away", func(t *testing.T) {
		read1, gone := make(chan struct{}), make(chan error, 1)
		p := newStreamPair(t, proof.HTTPSig, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			eventThenEvent(w, r, mcpProgress, read1, mcpSSEReply)
			<-r.Context().Done()
			gone <- r.Context().Err()
		}, func(o *pairOptions) { o.ingressTLS = true })
		_, br, cancel := open(t, agentClient(t), "POST", p.egress.URL+"/t1", toolsCall, merge(eventStreamFields(), start()))
		if got := testkit.ReadEvent(t, br); got != mcpProgress {
			t.Fatalf("event 1: %q", got)
		}
		close(read1)
		if got := testkit.ReadEvent(t, br); got != mcpSSEReply {
			t.Fatalf("event 2: %q", got)
		}
		p.mu.Lock()
		proto := p.ingressProto
		p.mu.Unlock()
		if proto != "HTTP/2.0" {
			t.Fatalf("the proxies spoke %s", proto)
		}
		cancel()
		if err := waitFor(t, gone, "the application's request to end"); !errors.Is(err, context.Canceled) {
			t.Fatalf("the application's context ended with %v", err)
		}
	})
	t.Run("idle bound", func(t *testing.T) {
		logs := make(logSink, 8)
		p := newStreamPair(t, proof.HTTPSig, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, mcpProgress)
			flush(w)
			<-r.Context().Done()
		}, func(o *pairOptions) {
			o.ingressTLS = true
			o.ingress = func(c *proxy.IngressConfig) { c.StreamIdleTimeout, c.Log = 50*time.Millisecond, newJSONLogger(logs) }
		})
		_, br, _ := open(t, agentClient(t), "POST", p.egress.URL+"/t1", toolsCall, merge(eventStreamFields(), start()))
		if got := testkit.ReadEvent(t, br); got != mcpProgress {
			t.Fatalf("event 1: %q", got)
		}
		if rest, err := io.ReadAll(br); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("the stream ended with %q (%v), not broken off", rest, err)
		}
		if line := waitFor(t, (<-chan string)(logs), "the log line"); !strings.Contains(line, `"code":"upstream_unavailable"`) {
			t.Fatalf("log: %s", line)
		}
	})
}
