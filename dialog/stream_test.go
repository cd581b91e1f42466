package dialog_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
)

// streamWait bounds each wait for the other side: a receiver that held a stream whole
// would keep the client waiting for an event the handler sends only after the client
// read the one before, and the test fails instead of hanging.
const streamWait = 20 * time.Second

const (
	event1 = "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
	event2 = "event: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"
)

// signingTool starts a stateless tool t1 behind a receiver that signs its responses,
// with more options, answering with handler.
func (f *figure3) signingTool(t *testing.T, handler http.HandlerFunc, more ...dialog.ReceiverOption) *httptest.Server {
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	srv.Config.Handler = f.receiver(t, srv.URL+"/invoke", f.t1, false, more...).Middleware(handler)
	return srv
}

// a1Via is a1 with HTTP signatures over base (nil: the default transport).
func (f *figure3) a1Via(requireSigned bool, base http.RoundTripper) *agent.Agent {
	tr := &agent.Transport{Source: f.source(f.a1), Proof: proof.HTTPSig, RequireSignedResponse: requireSigned, Base: base,
		Responses: httpsig.NewVerifier(f.d.Validator(), httpsig.WithClock(f.clock.Now))}
	return &agent.Agent{Self: f.a1.ID, Client: &http.Client{Transport: tr}}
}

func streamContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), streamWait)
	t.Cleanup(cancel)
	return ctx
}

// http-signature-07 section 3.5: signing is RECOMMENDED, and a client that did not ask
// for a signed response MUST accept an unsigned one. With WithStreamingUnsigned an event
// stream to such a request goes out as the handler writes it: the client reads event 1
// while the handler waits for exactly that before it writes event 2. The Dialog-Context
// is echoed as in any unsigned response.
func TestWIMSESig3_5_UnaskedEventStreamPassesUnsignedAsWritten(t *testing.T) {
	f := newFigure3(t)
	read1 := make(chan struct{})
	srv := f.signingTool(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, event1)
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("the handler cannot flush its stream: %v", err)
			return
		}
		select {
		case <-read1:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, event2)
	}, dialog.WithStreamingUnsigned())
	res, dc, err := f.a1Via(false, nil).Start(streamContext(t), post(t, srv.URL+"/invoke"), "D1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode != 200 || res.ContentLength != -1:
		t.Fatalf("status %d length %d", res.StatusCode, res.ContentLength)
	case res.Header.Get("Signature") != "" || res.Header.Get("Signature-Input") != "":
		t.Fatalf("the passed-through stream carries a signature: %v", res.Header)
	case res.Header.Get(dialog.HeaderName) != dc.Value():
		t.Fatalf("Dialog-Context %q, want %q", res.Header.Get(dialog.HeaderName), dc.Value())
	}
	br := bufio.NewReader(res.Body)
	if got := testkit.ReadEvent(t, br); got != event1 {
		t.Fatalf("event 1: %q", got)
	}
	close(read1)
	if rest, err := io.ReadAll(br); err != nil || string(rest) != event2 {
		t.Fatalf("the rest: %q (%v)", rest, err)
	}
}

// Section 3.5: a request that asked for a signed response (wimse-sign-response) gets
// one, event stream or not, with WithStreamingUnsigned too: the receiver holds the
// stream, the handler learns that it cannot flush, and the whole body is signed over
// its Content-Digest with the Dialog-Context covered (dialog-binding section 7), which
// agent.Transport verifies with httpsig's verifier.
func TestWIMSESig3_5_AskedEventStreamIsSignedWhole(t *testing.T) {
	f := newFigure3(t)
	flushed := make(chan error, 1)
	srv := f.signingTool(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, event1)
		flushed <- http.NewResponseController(w).Flush()
		_, _ = io.WriteString(w, event2)
	}, dialog.WithStreamingUnsigned())
	res, _, err := f.a1Via(true, nil).Start(streamContext(t), post(t, srv.URL+"/invoke"), "D1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || string(body) != event1+event2 || res.ContentLength != int64(len(body)) {
		t.Fatalf("body %q length %d (%v)", body, res.ContentLength, err)
	}
	si := res.Header.Get("Signature-Input")
	if !strings.Contains(si, `"content-digest"`) || !strings.Contains(si, `"dialog-context"`) {
		t.Fatalf("the signature does not cover the body and the Dialog-Context: %q", si)
	}
	if err := <-flushed; !errors.Is(err, http.ErrNotSupported) {
		t.Fatalf("a held response flushed: %v", err)
	}
}

// recordAnswer keeps the status and the problem code of the last answer it carried.
type recordAnswer struct {
	mu     sync.Mutex
	status int
	code   errcode.Code
	signed bool
}

func (ra *recordAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(strings.NewReader(string(body)))
	ra.mu.Lock()
	ra.status, ra.code, ra.signed = res.StatusCode, errcode.CodeOf(problem.Read(res.StatusCode, body)), res.Header.Get("Signature-Input") != ""
	ra.mu.Unlock()
	return res, nil
}

// Section 3.5: where a signed response is required and cannot be made (here a stream
// past MaxSignedResponseBody) the server MUST NOT send an unsigned success: the
// receiver answers 501 response_not_signable as soon as the bound is passed, and the
// handler's next write fails. Required by policy (a signer without
// WithStreamingUnsigned, the client not asking) and by the client asking alike.
func TestWIMSESig3_5_RequiredSignatureRefusesAStreamOverTheBound(t *testing.T) {
	chunk := "data: " + strings.Repeat("x", 64<<10) + "\n\n"
	for _, tc := range []struct {
		name   string
		asked  bool
		option []dialog.ReceiverOption
	}{
		{"policy", false, nil},
		{"asked", true, []dialog.ReceiverOption{dialog.WithStreamingUnsigned()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFigure3(t)
			stopped := make(chan error, 1)
			srv := f.signingTool(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for range dialog.MaxSignedResponseBody/len(chunk) + 2 {
					if _, err := io.WriteString(w, chunk); err != nil {
						stopped <- err
						return
					}
					_ = http.NewResponseController(w).Flush()
				}
				stopped <- nil
			}, tc.option...)
			rec := &recordAnswer{}
			res, _, err := f.a1Via(tc.asked, rec).Start(streamContext(t), post(t, srv.URL+"/invoke"), "D1")
			if tc.asked {
				// The client that asked takes the unsigned refusal as a refusal, with
				// the server's code, never as a response (issue 22 point 5).
				var ur *agent.UnverifiedRefusal
				if res != nil || errcode.CodeOf(err) != errcode.ResponseNotSignable || !errors.As(err, &ur) {
					t.Fatalf("the client took an unsigned answer: %v", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
			}
			rec.mu.Lock()
			status, code, signed := rec.status, rec.code, rec.signed
			rec.mu.Unlock()
			if status != http.StatusNotImplemented || code != errcode.ResponseNotSignable || signed {
				t.Fatalf("answer %d %s signed %v, want an unsigned 501 response_not_signable", status, code, signed)
			}
			if err := <-stopped; errcode.CodeOf(err) != errcode.ResponseNotSignable {
				t.Fatalf("the handler's write past the bound: %v", err)
			}
		})
	}
}

// Section 3.5: a reply that is not an event stream is signed, asked or not, with
// WithStreamingUnsigned or without, even when the handler flushes it: a flush does not
// make a reply open-ended.
func TestWIMSESig3_5_UnaskedJSONIsStillSigned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		option []dialog.ReceiverOption
	}{{"default", nil}, {"streaming unsigned", []dialog.ReceiverOption{dialog.WithStreamingUnsigned()}}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFigure3(t)
			srv := f.signingTool(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0",`)
				_ = http.NewResponseController(w).Flush()
				_, _ = io.WriteString(w, `"id":1,"result":{}}`)
			}, tc.option...)
			res, _, err := f.a1Via(false, nil).Start(streamContext(t), post(t, srv.URL+"/invoke"), "D1")
			if err != nil {
				t.Fatal(err) // a signed response is verified, asked or not
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if si := res.Header.Get("Signature-Input"); !strings.Contains(si, `"content-digest"`) || string(body) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
				t.Fatalf("not signed whole: %q %q", si, body)
			}
		})
	}
}

// stripSignature removes the response signature on the way back, as a party between
// the two could.
type stripSignature struct{}

func (stripSignature) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		res.Header.Del("Signature")
		res.Header.Del("Signature-Input")
	}
	return res, err
}

// Section 3.5 at the client: agent.Transport with RequireSignedResponse rejects an
// unsigned reply (an event stream whose signature was removed on the way), and one that
// did not ask accepts it, as it MUST.
func TestWIMSESig3_5_RequireSignedResponseRejectsAnUnsignedStream(t *testing.T) {
	f := newFigure3(t)
	srv := f.signingTool(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, event1)
	}, dialog.WithStreamingUnsigned())
	if _, _, err := f.a1Via(true, stripSignature{}).Start(streamContext(t), post(t, srv.URL+"/invoke"), "D1"); errcode.CodeOf(err) != errcode.MissingCredential {
		t.Fatalf("an unsigned reply to a request that demanded a signature: %v", err)
	}
	res, _, err := f.a1Via(false, stripSignature{}).Start(streamContext(t), post(t, srv.URL+"/invoke"), "D2")
	if err != nil {
		t.Fatalf("a client that did not ask refused an unsigned reply: %v", err)
	}
	res.Body.Close()
}

// unwrapping is a middleware's writer around the receiver's, as http.ResponseController
// follows it.
type unwrapping struct{ http.ResponseWriter }

func (u unwrapping) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// HoldsResponse says, for the writer a handler got (or one wrapping it), what section
// 3.5 makes of each response: held to be signed, but an event stream nobody asked to
// have signed with WithStreamingUnsigned; nothing is held without a signer.
func TestWIMSESig3_5_HoldsResponse(t *testing.T) {
	sse, json := http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}, http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name             string
		asked            bool
		option           []dialog.ReceiverOption
		holdSSE, holdRaw bool
	}{
		{"default", false, nil, true, true},
		{"streaming unsigned", false, []dialog.ReceiverOption{dialog.WithStreamingUnsigned()}, false, true},
		{"streaming unsigned, asked", true, []dialog.ReceiverOption{dialog.WithStreamingUnsigned()}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFigure3(t)
			got := make(chan [2]bool, 1)
			srv := f.signingTool(t, func(w http.ResponseWriter, r *http.Request) {
				got <- [2]bool{dialog.HoldsResponse(unwrapping{w}, sse), dialog.HoldsResponse(w, json)}
			}, tc.option...)
			res, _, err := f.a1Via(tc.asked, nil).Start(streamContext(t), post(t, srv.URL+"/invoke"), "D1")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if g := <-got; g != [2]bool{tc.holdSSE, tc.holdRaw} {
				t.Fatalf("holds an event stream, JSON: %v, want %v %v", g, tc.holdSSE, tc.holdRaw)
			}
		})
	}
	rec := httptest.NewRecorder()
	if dialog.HoldsResponse(rec, sse) || dialog.HoldsResponse(unwrapping{rec}, json) {
		t.Fatal("a writer that is not a receiver's holds")
	}
}
