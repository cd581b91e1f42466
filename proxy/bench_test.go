package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// processCPU is this process's user and system CPU time so far: every goroutine's, so
// the client's, the proxies', the receiver's and the application's alike.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stubTTS answers every Txn-Token request with one token minted beforehand for
// dialog dlg, so that neither side of the benchmark pays for a TTS: both ask it once,
// through the same client, and then use agent.TTSSource's cached token.
type stubTTS struct{ body []byte }

func (s stubTTS) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(s.body)), ContentLength: int64(len(s.body)), Request: r}, nil
}

// benchWorld is one request's work done three ways for the same workloads, the same
// receiver (its WIT validator and cache, its replay store, its Txn-Token verifier and
// its response signer), the same Txn-Token source behaviour and the same handler:
// (A) agent.Transport to dialog.Receiver's middleware in front of the handler, and (B) a
// plain client to an Egress, to an Ingress, to the handler behind it, twice: pairs[0]
// with B's two local hops (client to egress, ingress to application) over loopback
// TCP, pairs[1] over Unix domain sockets, as a sidecar's local hops usually are. Every
// hop is real HTTP; A's one exchange and B's between the proxies are the network hop
// both have, TCP in every case.
type benchWorld struct {
	dc      *dialog.Context
	direct  *agent.Agent
	directU string
	body    []byte
	pairs   [2]*benchPair
}

// benchPair is one (B): its client, the egress's URL for it, and the floor beside (A):
// hopsU and appU serve B's two exchanges that A has not, replayed plain on the same kind
// of listener (client to egress, ingress to application), with the fields and answers
// that travelled there in the warm-up request.
type benchPair struct {
	plain   *http.Client
	egressU string

	hopsU, appU string
	// egressAnswer is what the egress answered the warm-up request; appFields, the
	// fields the application got with it.
	egressAnswer     http.Header
	egressAnswerBody []byte
	appFields        http.Header
}

const benchDialog = "D1"

// benchListener is a listener for one of B's local hops: loopback TCP, or a Unix socket
// named name in dir.
func benchListener(b *testing.B, unix bool, dir, name string) net.Listener {
	if !unix {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		mustOK(b, err)
		return ln
	}
	ln, err := net.Listen("unix", filepath.Join(dir, name))
	mustOK(b, err)
	return ln
}

// startOn serves h on ln until the benchmark ends; the URL is http://host:port, or
// unix:///path for a Unix socket.
func startOn(b *testing.B, ln net.Listener, h http.Handler) string {
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	b.Cleanup(srv.Close)
	if a, ok := ln.Addr().(*net.UnixAddr); ok {
		return "unix://" + a.Name
	}
	return srv.URL
}

// unixDialer sends a connection for host:80 to the socket sockets names for it (the
// client side of B's local hops on Unix sockets, net/http's own transport dialing).
func unixDialer(sockets map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, ok := sockets[addr]; ok {
			return d.DialContext(ctx, "unix", p)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// localURL is the URL a client of B's local hop uses for a server at u: u itself, or
// for a Unix socket http://<name> with the dialer sending <name>:80 to the socket.
func localURL(u, name string, sockets map[string]string) string {
	if p, ok := strings.CutPrefix(u, "unix://"); ok {
		sockets[name+":80"] = p
		return "http://" + name
	}
	return u
}

func newBenchWorld(b *testing.B, method proof.Method, alg string) *benchWorld {
	d := testkit.NewDomain(b, td, alg, testkit.NewClock(time.Now()))
	a1 := d.Workload(b, "/agent/a1", alg)
	t1 := d.Workload(b, "/tool/t1", alg)
	a1src := &wit.Credential{WIT: a1.WIT, Key: a1.Key, Expiry: time.Now().Add(time.Hour)}
	t1cred := &wit.Credential{WIT: t1.WIT, Key: t1.Key, Expiry: time.Now().Add(time.Hour)}

	ttsKey, err := keys.Generate(alg)
	mustOK(b, err)
	ttsKeys, err := keys.NewStaticSet(ttsKey.Public())
	mustOK(b, err)
	now := time.Now().Unix()
	tok, err := jose.SignClaims(txntoken.Type, ttsKey, true, map[string]any{"iss": "https://tts.a.example", "iat": now, "exp": now + 600,
		"aud": td, "txn": "97053963-771d-49cc-a4e3-20aad399c312", "sub": "alice@" + td, "scope": "trip.book",
		"req_wl": a1.ID.String(), "tctx": map[string]any{"dlg": benchDialog}})
	mustOK(b, err)
	tr, err := json.Marshal(map[string]any{"access_token": tok, "issued_token_type": oauth.TokenTypeTxnToken, "token_type": "N_A", "expires_in": 600})
	mustOK(b, err)
	ttsClient := &txntoken.Client{TokenEndpoint: "https://tts.a.example/token", WITSource: a1src, Proof: proof.WPT,
		HTTPClient: &http.Client{Transport: stubTTS{tr}}}
	subject := func(context.Context) (string, string, error) { return "subject", oauth.TokenTypeSelfSigned, nil }

	const recipient = "https://t1.a.example/"
	wits := wit.NewValidator(d.Trust, wit.WithCache(1024, time.Minute))
	replay := store.NewMemory()
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(recipient), httpsig.WithReplay(replay))),
		dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences(recipient), wpt.WithReplay(replay))),
		dialog.WithTxnTokens(txntoken.NewVerifier(ttsKeys, td)),
		dialog.RequireTxnToken(), dialog.RequireDialog(),
		dialog.WithResponseSigner(func(context.Context) (*httpsig.Signer, error) { return httpsig.NewSigner(t1cred.Key, t1cred.WIT), nil }),
	)
	mustOK(b, err)
	responses := httpsig.NewVerifier(wits)
	signed := method == proof.HTTPSig

	// The handler: read the body, answer a small JSON document naming the sender.
	handle := func(w http.ResponseWriter, r *http.Request, sender string) {
		in, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"sender":"`+sender+`","got":`+string(in)+`}`)
	}

	// A: in process.
	direct := httptest.NewServer(rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handle(w, r, dialog.FromRequest(r).Sender.String())
	})))
	b.Cleanup(direct.Close)
	// The benchmark's own clients keep as many idle connections as the proxies do, so
	// that under load A and B both reuse theirs (net/http keeps 2 per host).
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.Proxy = nil
	base.MaxIdleConnsPerHost = proxy.MaxIdleConnsPerUpstream
	b.Cleanup(base.CloseIdleConnections)
	directAgent := &agent.Agent{Self: a1.ID, Client: &http.Client{Transport: &agent.Transport{Base: base, Source: a1src,
		Tokens: agent.NewTTSSource(ttsClient, td, "trip.book", subject, nil), Proof: method, Responses: responses,
		RequireSignedResponse: signed, Audience: func(*http.Request) string { return recipient }}}}

	// B: through the pair; its local hops on TCP or Unix sockets, the hop between the
	// proxies on TCP.
	app := func(w http.ResponseWriter, r *http.Request) { handle(w, r, r.Header.Get(proxy.VerifiedSenderField)) }
	newPair := func(unix bool) *benchPair {
		dir := ""
		if unix {
			dir = b.TempDir()
		}
		pair := &benchPair{}
		appURL := startOn(b, benchListener(b, unix, dir, "app.sock"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if pair.appFields == nil {
				pair.appFields = r.Header.Clone()
			}
			app(w, r)
		}))
		in, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: appURL})
		mustOK(b, err)
		ingress := httptest.NewServer(in)
		b.Cleanup(ingress.Close)
		eg, err := proxy.NewEgress(proxy.EgressConfig{Self: a1.ID, WIT: a1src, TTS: ttsClient, Subject: subject, Responses: responses,
			Routes: []proxy.Route{{Prefix: "/t1", Upstream: ingress.URL, TxnAudience: td, TxnScope: "trip.book",
				Proof: method, RequireSignedResponse: signed, Recipient: recipient}}})
		mustOK(b, err)
		sockets := map[string]string{}
		pair.egressU = localURL(startOn(b, benchListener(b, unix, dir, "egress.sock"), eg), "egress", sockets) + "/t1/invoke"
		plainTr := http.DefaultTransport.(*http.Transport).Clone()
		plainTr.Proxy = nil
		plainTr.MaxIdleConnsPerHost = proxy.MaxIdleConnsPerUpstream
		plainTr.DialContext = unixDialer(sockets)
		b.Cleanup(plainTr.CloseIdleConnections)
		pair.plain = &http.Client{Transport: plainTr}

		// The floor's two plain servers, on the same kind of listener as B's local
		// hops: one answers as the egress answered, the other is the application again.
		hopsURL := startOn(b, benchListener(b, unix, dir, "hops.sock"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			for k, v := range pair.egressAnswer {
				if k != "Content-Length" && k != "Date" {
					w.Header()[k] = v
				}
			}
			_, _ = w.Write(pair.egressAnswerBody)
		}))
		pair.hopsU = localURL(hopsURL, "hops", sockets) + "/t1/invoke"
		pair.appU = localURL(startOn(b, benchListener(b, unix, dir, "app-again.sock"), http.HandlerFunc(app)), "app-again", sockets) + "/invoke"
		return pair
	}

	dc, err := dialog.New(benchDialog, a1.ID)
	mustOK(b, err)
	return &benchWorld{dc: dc, direct: directAgent, directU: direct.URL + "/invoke",
		body: []byte(`{"tool":"search","arguments":{"q":"flights to Lisbon","max":5}}`), pairs: [2]*benchPair{newPair(false), newPair(true)}}
}

// viaAgent is request A: the answer's body.
func (w *benchWorld) viaAgent(b *testing.B) []byte {
	body, err := w.tryViaAgent()
	mustOK(b, err)
	return body
}

// tryViaAgent is viaAgent for a goroutine of its own (which may not end the benchmark).
func (w *benchWorld) tryViaAgent() ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, w.directU, bytes.NewReader(w.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.direct.Continue(context.Background(), req, w.dc, nil)
	if err != nil {
		return nil, err
	}
	return readAnswer(res)
}

// viaProxies is request B: the same request, plain, through the egress and the ingress.
// The first answer is kept for the floor (plainHops).
func (w *benchWorld) viaProxies(b *testing.B, p *benchPair) []byte {
	res, body, err := w.tryViaProxies(p)
	mustOK(b, err)
	if p.egressAnswer == nil {
		p.egressAnswer, p.egressAnswerBody = res.Header, body
	}
	return body
}

// tryViaProxies is viaProxies for a goroutine of its own, keeping nothing.
func (w *benchWorld) tryViaProxies(p *benchPair) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, p.egressU, bytes.NewReader(w.body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dialog.HeaderName, w.dc.Value())
	res, err := p.plain.Do(req)
	if err != nil {
		return nil, nil, err
	}
	body, err := readAnswer(res)
	return res, body, err
}

// plainHops is the floor of what (B) adds: its two exchanges that (A) has not, plain.
func (w *benchWorld) plainHops(b *testing.B, p *benchPair) {
	req, err := http.NewRequest(http.MethodPost, p.hopsU, bytes.NewReader(w.body))
	mustOK(b, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dialog.HeaderName, w.dc.Value())
	res, err := p.plain.Do(req)
	mustOK(b, err)
	readOK(b, res)
	req, err = http.NewRequest(http.MethodPost, p.appU, bytes.NewReader(w.body))
	mustOK(b, err)
	req.Header = p.appFields.Clone()
	res, err = p.plain.Do(req)
	mustOK(b, err)
	readOK(b, res)
}

func readOK(b *testing.B, res *http.Response) []byte {
	body, err := readAnswer(res)
	mustOK(b, err)
	return body
}

// readAnswer reads res whole; an answer other than 200 is an error.
func readAnswer(res *http.Response) ([]byte, error) {
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("%d %s", res.StatusCode, body)
	}
	return body, err
}

// BenchmarkProxyPairRatio is issue 15's budget: the CPU the proxy pair spends on one
// request against the in-process agent.Transport and dialog.Receiver doing the same
// work. Each iteration sends one request each way (A: agent.Transport to the receiver's
// middleware; B: a plain client through Egress and Ingress, once with B's two local
// hops on loopback TCP and once on Unix sockets), in one dialog, with the same
// credentials, receiver, cached Txn-Token and handler, so that all see the same machine
// at the same moment. CPU is the whole process's (getrusage: user plus system, every
// goroutine's, client and servers included) read around each request, so other
// processes on a busy machine do not count; wall time is reported beside it. ratio-x is
// B's CPU over A's with the local hops on TCP, ratio-unix-x with them on Unix sockets.
// hops-cpu (hops-unix-cpu) is the floor of what B adds, measured in the same iteration:
// B's two exchanges that A has not (client to egress, ingress to application),
// replayed plain with the same fields and answers on the same kind of listener;
// own-cpu (own-unix-cpu) is B minus A minus that floor, what the proxies' own code
// spends beside the work.
func BenchmarkProxyPairRatio(b *testing.B) {
	for _, method := range []proof.Method{proof.HTTPSig, proof.WPT} {
		for _, alg := range []string{keys.ES256, keys.EdDSA} {
			name := method.String() + "/ES256"
			if alg == keys.EdDSA {
				name = method.String() + "/Ed25519"
			}
			b.Run(name, func(b *testing.B) { benchPairRatio(b, method, alg) })
		}
	}
}

func benchPairRatio(b *testing.B, method proof.Method, alg string) {
	w := newBenchWorld(b, method, alg)
	// Warm: the Txn-Token asked once per side, connections open, WITs cached; and the
	// answers are the same document.
	a := w.viaAgent(b)
	if !strings.Contains(string(a), `"sender":"wimse://`+td+`/agent/a1"`) {
		b.Fatalf("A answers %s", a)
	}
	for _, p := range w.pairs {
		if got := w.viaProxies(b, p); !bytes.Equal(a, got) {
			b.Fatalf("the two ways answer differently:\n%s\n%s", a, got)
		}
		w.plainHops(b, p)
	}
	var cpuA, wallA time.Duration
	var cpuB, cpuHops, wallB [2]time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0, t0 := processCPU(b), time.Now()
		w.viaAgent(b)
		cpuA += processCPU(b) - c0
		wallA += time.Since(t0)
		for j := range w.pairs {
			// Each goes first in every other iteration: neither gains from following
			// the other.
			k := j ^ (i & 1)
			p := w.pairs[k]
			c1, t1 := processCPU(b), time.Now()
			w.viaProxies(b, p)
			c2, t2 := processCPU(b), time.Now()
			w.plainHops(b, p)
			c3 := processCPU(b)
			cpuB[k] += c2 - c1
			cpuHops[k] += c3 - c2
			wallB[k] += t2.Sub(t1)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cpuA.Microseconds())/n, "a-cpu-µs/op")
	b.ReportMetric(float64(wallA.Microseconds())/n, "a-wall-µs/op")
	for k, suffix := range []string{"", "-unix"} {
		b.ReportMetric(float64(cpuB[k].Microseconds())/n, "b"+suffix+"-cpu-µs/op")
		b.ReportMetric(float64(wallB[k].Microseconds())/n, "b"+suffix+"-wall-µs/op")
		b.ReportMetric(float64(cpuHops[k].Microseconds())/n, "hops"+suffix+"-cpu-µs/op")
		b.ReportMetric(float64((cpuB[k]-cpuA-cpuHops[k]).Microseconds())/n, "own"+suffix+"-cpu-µs/op")
		b.ReportMetric(float64(cpuB[k])/float64(cpuA), "ratio"+suffix+"-x")
		b.ReportMetric(float64(wallB[k])/float64(wallA), "wall-ratio"+suffix+"-x")
	}
}

// BenchmarkProxyPairRatioLoaded is BenchmarkProxyPairRatio under load, the way a
// sidecar sees it: in each iteration loadWorkers goroutines each send loadPerWorker
// requests one way, then the next way (A, B with its local hops on TCP, B with them on
// Unix sockets; the order rotates), and the process's CPU over each phase is divided by
// the requests the phase sent. ratio-x (ratio-unix-x) is B's CPU per request over A's.
// Every client and proxy keeps proxy.MaxIdleConnsPerUpstream idle connections per host
// and an untimed warm-up phase of each way opens them, so the timed phases dial nothing:
// with net/http's default of 2 the pair's two extra hops dialed, accepted and closed a
// connection for nearly every request, which is what first made B look far dearer
// under load. There is no floor of plain hops here; BenchmarkProxyPairRatio measures it.
func BenchmarkProxyPairRatioLoaded(b *testing.B) {
	for _, method := range []proof.Method{proof.HTTPSig, proof.WPT} {
		for _, alg := range []string{keys.ES256, keys.EdDSA} {
			name := method.String() + "/ES256"
			if alg == keys.EdDSA {
				name = method.String() + "/Ed25519"
			}
			b.Run(name, func(b *testing.B) { benchPairRatioLoaded(b, method, alg) })
		}
	}
}

const (
	loadWorkers   = 8
	loadPerWorker = 16
)

func benchPairRatioLoaded(b *testing.B, method proof.Method, alg string) {
	w := newBenchWorld(b, method, alg)
	a := w.viaAgent(b)
	for _, p := range w.pairs {
		if got := w.viaProxies(b, p); !bytes.Equal(a, got) {
			b.Fatalf("the two ways answer differently:\n%s\n%s", a, got)
		}
	}
	ways := []func() error{
		func() error { _, err := w.tryViaAgent(); return err },
		func() error { _, _, err := w.tryViaProxies(w.pairs[0]); return err },
		func() error { _, _, err := w.tryViaProxies(w.pairs[1]); return err },
	}
	// phase sends the requests of one way and returns the process's CPU over them; the
	// workers only record a failure (b.Fatal belongs to the benchmark's goroutine).
	phase := func(f func() error) time.Duration {
		var failed atomic.Pointer[error]
		c0 := processCPU(b)
		var wg sync.WaitGroup
		for range loadWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range loadPerWorker {
					if err := f(); err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
				}
			}()
		}
		wg.Wait()
		cpu := processCPU(b) - c0
		if err := failed.Load(); err != nil {
			b.Fatal(*err)
		}
		return cpu
	}
	for _, f := range ways {
		phase(f) // warm: loadWorkers connections open on every hop
	}
	var cpu [3]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range ways {
			k := (j + i) % len(ways)
			cpu[k] += phase(ways[k])
		}
	}
	b.StopTimer()
	n := float64(b.N * loadWorkers * loadPerWorker)
	b.ReportMetric(float64(cpu[0].Microseconds())/n, "a-cpu-µs/req")
	b.ReportMetric(float64(cpu[1].Microseconds())/n, "b-cpu-µs/req")
	b.ReportMetric(float64(cpu[2].Microseconds())/n, "b-unix-cpu-µs/req")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "ratio-x")
	b.ReportMetric(float64(cpu[2])/float64(cpu[0]), "ratio-unix-x")
}
