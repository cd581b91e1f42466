package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
)

// shortWrite is the WriteTimeout of both proxies' servers in these tests, in place of
// package httpserver's 30 s; slowApp is how long the slow application takes to answer,
// well past it.
const (
	shortWrite = 100 * time.Millisecond
	slowApp    = 4 * shortWrite
)

// callAgent sends the agent's JSON-RPC request through p's egress on a client of its
// own (no connection shared with another test) and reads the answer; a transport error
// (a reset connection) fails the test.
func callAgent(t *testing.T, p *pair, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", p.egress.URL+"/t1", strings.NewReader(toolsCall))
	mustOK(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(proxy.StartDialogField, "?1")
	res, err := agentClient(t).Do(req)
	if err != nil {
		t.Fatalf("the agent got no answer: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("the agent's answer broke off: %v", err)
	}
	return res, body
}

// slowly answers after slowApp (or not at all when the request ends first).
func slowly(answer func(w http.ResponseWriter)) func(w http.ResponseWriter, r *http.Request, _ []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-time.After(slowApp):
			answer(w)
		case <-r.Context().Done():
		}
	}
}

// An application slower than both proxies' servers' WriteTimeout but within the
// upstream timeout is answered: each proxy moves its server's write deadline past its
// wait. Before, the agent got a reset connection at the WriteTimeout.
func TestUpstreamSlowerThanWriteTimeoutIsAnswered(t *testing.T) {
	json := slowly(func(w http.ResponseWriter) { mcpResult(w, "") })
	for name, o := range map[string]pairOptions{
		// Read whole at both sides: the ingress signs, the egress verifies.
		"signed":     {method: proof.HTTPSig, app: json},
		"wpt":        {method: proof.WPT, app: json},
		"stateful":   {method: proof.HTTPSig, stateful: true, app: json},
		"HTTP/2 hop": {method: proof.HTTPSig, ingressTLS: true, egress: func(c *proxy.EgressConfig) { c.Base = nil }, app: json},
		// Passed through as it comes once its header arrives, late.
		"event stream": {method: proof.HTTPSig, unsignedOK: true, unsignedResponses: true, egress: func(c *proxy.EgressConfig) { c.Base = nil },
			app: slowly(func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, mcpProgress+mcpSSEReply)
			})},
	} {
		t.Run(name, func(t *testing.T) {
			o.writeTimeout = shortWrite
			p := newPair(t, o)
			start := time.Now()
			res, body := callAgent(t, p, eventStreamFields())
			if res.StatusCode != 200 || !strings.Contains(string(body), "booked") {
				t.Fatalf("%d %s", res.StatusCode, body)
			}
			if took := time.Since(start); took < slowApp {
				t.Fatalf("answered after %s, before the application did", took)
			}
		})
	}
}

// An application that does not answer within the upstream timeout gets the agent
// upstream_unavailable (503, kind incomplete), not a reset connection, from the side
// whose wait ran out, even when that wait is as long as its server's WriteTimeout, and
// the application's request ends.
func TestUpstreamTimeoutAnswersUpstreamUnavailable(t *testing.T) {
	for _, side := range []string{"egress", "ingress"} {
		for _, method := range []proof.Method{proof.HTTPSig, proof.WPT} {
			t.Run(side+"/"+method.String(), func(t *testing.T) {
				gone := make(chan struct{})
				o := pairOptions{method: method, writeTimeout: shortWrite, app: func(w http.ResponseWriter, r *http.Request, _ []byte) {
					<-r.Context().Done()
					close(gone)
				}}
				if side == "egress" {
					o.egress = func(c *proxy.EgressConfig) { c.UpstreamTimeout = shortWrite }
				} else {
					o.ingress = func(c *proxy.IngressConfig) { c.UpstreamTimeout = shortWrite }
				}
				p := newPair(t, o)
				res, body := callAgent(t, p, nil)
				err := problem.Read(res.StatusCode, body)
				if res.StatusCode != http.StatusServiceUnavailable || errcode.CodeOf(err) != errcode.UpstreamUnavailable || errcode.KindOf(err) != errcode.Incomplete {
					t.Fatalf("%d %s", res.StatusCode, body)
				}
				if !strings.Contains(string(body), "did not complete within 100ms") {
					t.Fatalf("the detail does not say the wait ran out: %s", body)
				}
				if side == "ingress" {
					// The ingress's own answer, passed back by the egress.
					if code, answer := p.ingressCode(); code != errcode.UpstreamUnavailable {
						t.Fatalf("the ingress answered %s", answer)
					}
				}
				waitFor(t, gone, "the application's request to end")
			})
		}
	}
}

// The route's own upstream timeout takes the place of the egress's.
func TestRouteUpstreamTimeout(t *testing.T) {
	p := newPair(t, pairOptions{method: proof.HTTPSig, writeTimeout: shortWrite,
		app:    func(_ http.ResponseWriter, r *http.Request, _ []byte) { <-r.Context().Done() },
		egress: func(c *proxy.EgressConfig) { c.UpstreamTimeout = time.Hour },
		route:  func(_ identifier.ID, r *proxy.Route) { r.UpstreamTimeout = shortWrite }})
	res, body := callAgent(t, p, nil)
	if res.StatusCode != http.StatusServiceUnavailable || codeOf(res.StatusCode, body) != errcode.UpstreamUnavailable {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

// A deadline of the agent's request itself (a server or a middleware in front of the
// egress setting one) shortens the wait: the agent still gets upstream_unavailable
// when it passes, before the upstream timeout.
func TestUpstreamWaitEndsAtTheRequestsDeadline(t *testing.T) {
	p := newPair(t, pairOptions{method: proof.HTTPSig, writeTimeout: shortWrite,
		app: func(_ http.ResponseWriter, r *http.Request, _ []byte) { <-r.Context().Done() },
		wrapEgress: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithTimeout(r.Context(), 2*shortWrite)
				defer cancel()
				h.ServeHTTP(w, r.WithContext(ctx))
			})
		}})
	res, body := callAgent(t, p, nil)
	if res.StatusCode != http.StatusServiceUnavailable || codeOf(res.StatusCode, body) != errcode.UpstreamUnavailable {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

func TestNegativeUpstreamTimeoutRefused(t *testing.T) {
	p := newPair(t, pairOptions{})
	_, err := proxy.NewEgress(proxy.EgressConfig{Self: p.a1, WIT: p.a1src, UpstreamTimeout: -time.Second,
		Routes: []proxy.Route{{Prefix: "/t1", Upstream: p.ingress.URL, Proof: proof.WPT}}})
	if errcode.CodeOf(err) != errcode.InvalidRequest || !strings.Contains(err.Error(), "upstream timeout") {
		t.Errorf("egress: %v", err)
	}
	_, err = proxy.NewEgress(proxy.EgressConfig{Self: p.a1, WIT: p.a1src,
		Routes: []proxy.Route{{Prefix: "/t1", Upstream: p.ingress.URL, Proof: proof.WPT, UpstreamTimeout: -time.Second}}})
	if errcode.CodeOf(err) != errcode.InvalidRequest || !strings.Contains(err.Error(), "egress route /t1: the upstream timeout") {
		t.Errorf("route: %v", err)
	}
	_, err = proxy.NewEgress(proxy.EgressConfig{Self: p.a1, WIT: p.a1src,
		Routes: []proxy.Route{{Prefix: "/t1", Upstream: p.ingress.URL, Proof: proof.WPT, UpstreamTimeout: time.Second}}})
	mustOK(t, err)
	rc, err := dialog.NewReceiver(p.d.receiverOptions(wit.NewValidator(p.d.trust), p.recipient, store.NewMemory(), nil, false)...)
	mustOK(t, err)
	_, err = proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: p.app.url, UpstreamTimeout: -time.Second})
	if errcode.CodeOf(err) != errcode.InvalidRequest || !strings.Contains(err.Error(), "ingress: the upstream timeout") {
		t.Errorf("ingress: %v", err)
	}
	_, err = proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: p.app.url, UpstreamTimeout: time.Second})
	mustOK(t, err)
}

// blockedTTS is the TTS client's transport when the TTS does not answer: each request
// waits until it is canceled.
type blockedTTS struct{}

func (blockedTTS) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// The wait covers the handoff step: when it runs out while the egress asks for the
// Txn-Token the offer's grant binds (the test's TTS client has no bound of its own),
// the agent's JSON-RPC request gets the JSON-RPC error form of the refusals there,
// with the code naming what did not answer (tts_unavailable) and kind incomplete, and
// nothing goes upstream.
func TestUpstreamTimeoutAtTheHandoffStep(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, egress: func(c *proxy.EgressConfig) {
		c.UpstreamTimeout = shortWrite
		tts := *c.TTS
		tts.HTTPClient = &http.Client{Transport: blockedTTS{}}
		c.TTS = &tts
	}})
	res, b := hp.send(t, toolsCall, nil)
	var got struct {
		ID    int `json:"id"`
		Error struct {
			Data struct {
				Code string `json:"code"`
				Kind string `json:"kind"`
			} `json:"data"`
		} `json:"error"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil || got.ID != 7 ||
		got.Error.Data.Code != string(errcode.TTSUnavailable) || got.Error.Data.Kind != "could_not_complete" {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	if hp.app.hits() != 0 {
		t.Fatal("the request went upstream")
	}
}
