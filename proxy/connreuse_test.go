package proxy_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// countingListener counts the connections its server accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func countingLoopback(t *testing.T) *countingListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	mustOK(t, err)
	return &countingListener{Listener: ln}
}

// wave holds every request that reaches the application until n of them are there
// at once, so that each hop of the pair really carries n requests concurrently.
type wave struct {
	mu      sync.Mutex
	n, seen int
	all     chan struct{}
}

func (w *wave) reset(n int) {
	w.mu.Lock()
	w.n, w.seen, w.all = n, 0, make(chan struct{})
	w.mu.Unlock()
}

func (w *wave) arrive(t *testing.T) {
	w.mu.Lock()
	w.seen++
	all := w.all
	if w.seen == w.n {
		close(all)
	}
	w.mu.Unlock()
	select {
	case <-all:
	case <-time.After(30 * time.Second): // a guard against a hang, not a wait
		t.Errorf("only %d of %d requests of a wave reached the application", w.seen, w.n)
	}
}

// Under concurrency the egress's and the ingress's default transports keep their
// upstream connections: after a warm-up wave, waves of concurrent requests through
// Egress -> Ingress -> application open at most as many new connections to the
// ingress and to the application as there are requests in flight, not one per request
// (net/http's default of 2 idle connections per host would close all but two after
// each wave and dial the rest again).
func TestProxyPairReusesUpstreamConnectionsUnderConcurrency(t *testing.T) {
	const concurrency, waves = 16, 3
	if concurrency <= http.DefaultMaxIdleConnsPerHost || concurrency > proxy.MaxIdleConnsPerUpstream {
		t.Fatal("the concurrency must lie between net/http's default and the proxy's setting")
	}
	ingressLn, appLn := countingLoopback(t), countingLoopback(t)
	var w wave
	w.reset(1)
	p := newPair(t, pairOptions{
		appListener: appLn, ingressListener: ingressLn,
		egress: func(c *proxy.EgressConfig) { c.Base = nil }, // the egress's own transport
		app: func(rw http.ResponseWriter, r *http.Request, _ []byte) {
			w.arrive(t)
			rw.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(rw, `{"sender":"`+r.Header.Get(proxy.VerifiedSenderField)+`"}`)
		},
	})
	// The agent's client keeps its connections to the egress, which are not counted.
	clientTr := http.DefaultTransport.(*http.Transport).Clone()
	clientTr.Proxy = nil
	clientTr.MaxIdleConnsPerHost = concurrency
	t.Cleanup(clientTr.CloseIdleConnections)
	client := &http.Client{Transport: clientTr}

	do := func(h http.Header) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, p.egress.URL+"/t1/tools", strings.NewReader(`{"q":1}`))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header[k] = v
		}
		res, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res, err
	}
	// The dialog, and its Txn-Token, once.
	res, err := do(start())
	mustOK(t, err)
	if res.StatusCode != 200 {
		t.Fatalf("starting the dialog: %d", res.StatusCode)
	}
	dc, err := dialog.FromHeader(res.Header)
	mustOK(t, err)
	inDialog := http.Header{dialog.HeaderName: {dc.Value()}}
	sendWave := func() {
		w.reset(concurrency)
		var wg sync.WaitGroup
		for range concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := do(inDialog)
				if err != nil {
					t.Error(err)
				} else if res.StatusCode != 200 {
					t.Errorf("a request in the dialog: %d", res.StatusCode)
				}
			}()
		}
		wg.Wait()
	}
	sendWave() // warm-up: opens the connections that the waves after it reuse
	if t.Failed() {
		t.FailNow()
	}
	ingress0, app0 := ingressLn.accepted.Load(), appLn.accepted.Load()
	for range waves {
		sendWave()
	}
	if t.Failed() {
		t.FailNow()
	}
	if n := ingressLn.accepted.Load() - ingress0; n > concurrency {
		t.Errorf("the ingress accepted %d new connections for %d requests, %d at a time", n, waves*concurrency, concurrency)
	}
	if n := appLn.accepted.Load() - app0; n > concurrency {
		t.Errorf("the application accepted %d new connections for %d requests, %d at a time", n, waves*concurrency, concurrency)
	}
	t.Logf("new connections after the warm-up: ingress %d, application %d, for %d requests",
		ingressLn.accepted.Load()-ingress0, appLn.accepted.Load()-app0, waves*concurrency)
}
