package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/loadtest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// receiverOptions configures the endpoint "bench receiver" serves and "bench verify"
// starts in-process: dialog.Receiver in front of a handler that answers {"ok":true}.
type receiverOptions struct {
	trust       keys.KeySet // the WIT issuer's keys
	trustDomain string
	audience    string      // this endpoint's URL: wimse-aud / WPT aud
	ttsKeys     keys.KeySet // nil: Txn-Tokens are not accepted
	stateful    bool
	registry    prometheus.Registerer
}

func newReceiverHandler(o receiverOptions) (http.Handler, error) {
	wits := wit.NewValidator(keys.NewTrust().AddTrustDomain(o.trustDomain, o.trust), wit.WithCache(10000, time.Minute))
	replay := store.NewMemory()
	opts := []dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(o.audience), httpsig.WithReplay(replay))),
		dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences(o.audience), wpt.WithReplay(replay))),
		dialog.RequireDialog(),
	}
	if o.ttsKeys != nil {
		opts = append(opts, dialog.WithTxnTokens(tts.NewVerifier(o.ttsKeys, o.trustDomain)), dialog.RequireTxnToken())
	}
	if o.stateful {
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())))
	}
	rc, err := dialog.NewReceiver(opts...)
	if err != nil {
		return nil, err
	}
	var verified prometheus.Counter = prometheus.NewCounter(prometheus.CounterOpts{Name: "dialogtrust_bench_receiver_verified_total", Help: "Requests the receiver verified."})
	if o.registry != nil {
		if err := o.registry.Register(verified); err != nil {
			return nil, err
		}
	}
	return rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verified.Inc()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})), nil
}

// keySetArg reads a JWKS from an http(s) URL (kept fresh, refetched on an unknown kid)
// or a file.
func keySetArg(ctx context.Context, hc *http.Client, src string) (keys.KeySet, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		return keys.NewRemoteSet(ctx, src, keys.WithHTTPClient(hc))
	}
	return keys.LoadJWKSFile(src)
}

// benchReceiver: dialogtrust bench receiver. Serves an endpoint protected by
// dialog.Receiver, with Prometheus process metrics on /metrics, for "bench verify
// --url" to load from another process (so that the receiver's own CPU and memory can
// be read apart from the load generator's).
func benchReceiver(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench receiver", stderr)
	listen := fs.String("listen", "127.0.0.1:8090", "loopback address to listen on")
	path := fs.String("path", "/invoke", "the protected endpoint's path")
	trustArg := fs.String("trust", "", "the WIT issuer's JWKS: http(s) URL or file")
	td := fs.String("trust-domain", "dev.local", "the trust domain of the senders' WITs (and the Txn-Tokens' audience)")
	ttsJWKS := fs.String("tts-jwks", "", "accept and require Txn-Tokens signed by these keys (http(s) URL or file)")
	stateful := fs.Bool("stateful", false, "keep a dialog registry (section 5) in memory")
	forDur := fs.Duration("for", 0, "stop after this long (default: at SIGINT or SIGTERM)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"trust": *trustArg}); err != nil {
		return err
	}
	if !isLoopbackAddr(*listen) {
		return usageError{"--listen must be a loopback address: this is a load-test target"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *forDur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *forDur)
		defer cancel()
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	trust, err := keySetArg(ctx, hc, *trustArg)
	if err != nil {
		return err
	}
	var ttsKeys keys.KeySet
	if *ttsJWKS != "" {
		if ttsKeys, err = keySetArg(ctx, hc, *ttsJWKS); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + *path
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h, err := newReceiverHandler(receiverOptions{trust: trust, trustDomain: *td, audience: url, ttsKeys: ttsKeys, stateful: *stateful, registry: reg})
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+*path, h)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httpserver.New(mux)
	fmt.Fprintf(stdout, "bench receiver on %s (pid %d, metrics on http://%s/metrics)\n", url, os.Getpid(), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// benchVerify: dialogtrust bench verify. Sends signed requests through agent.Transport
// (a WIMSE HTTP signature or a WPT, Dialog-Context, and with --tts a Txn-Token for the
// dialog) to an endpoint protected by dialog.Receiver: the one at --url, or one started
// in this process.
func benchVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench verify", stderr)
	target := fs.String("url", "", "the protected endpoint (e.g. from bench receiver); default: start one in this process")
	issuerURL := fs.String("wit-issuer", "", "a WIT issuer in development mode: one WIT per workload is requested there (default without --url: WITs minted in this process)")
	witArg := fs.String("wit", "", "instead: the WIT (file, @file, value or -)")
	keyFile := fs.String("key", "", "with --wit: its private JWK file")
	trustArg := fs.String("trust", "", "in-process receiver with --wit-issuer or --wit: the WIT issuer's JWKS (default: the issuer's jwks_uri)")
	td := fs.String("trust-domain", "dev.local", "the workloads' trust domain")
	workloads := fs.Int("workloads", 0, "distinct workloads, each with its own WIT (default: one per worker, at most 64)")
	prefix := fs.String("workload-prefix", "", "workload identifiers are this plus w1, w2, ... (default wimse://TRUST-DOMAIN/bench/)")
	alg := fs.String("alg", keys.ES256, "algorithm of the workload keys (ES256 or EdDSA)")
	proofArg := fs.String("proof", "httpsig", "proof of possession: httpsig or wpt")
	ttsURL := fs.String("tts", "", "send a Txn-Token per dialog from this TTS (self_signed subject); the in-process receiver then requires them")
	scope := fs.String("scope", "trip.read", "with --tts: the Txn-Tokens' scope")
	stateful := fs.Bool("stateful", false, "in-process receiver: keep a dialog registry")
	bf := addBenchFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{"unexpected argument " + fs.Arg(0)}
	}
	if err := bf.check(); err != nil {
		return err
	}
	if *issuerURL != "" && *witArg != "" {
		return usageError{"--wit-issuer and --wit exclude each other"}
	}
	if (*witArg == "") != (*keyFile == "") {
		return usageError{"--wit and --key go together"}
	}
	if *target != "" && *issuerURL == "" && *witArg == "" {
		return usageError{"with --url give --wit-issuer or --wit: the receiver must trust the WITs"}
	}
	var proof agent.Proof
	switch *proofArg {
	case "httpsig":
		proof = agent.HTTPSig
	case "wpt":
		proof = agent.WPT
	default:
		return usageError{"--proof must be httpsig or wpt"}
	}
	if err := checkAlg(*alg); err != nil {
		return err
	}
	if *prefix == "" {
		*prefix = "wimse://" + *td + "/bench/"
	}
	ctx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	hc := &http.Client{Transport: benchTransport(bf.concurrency), Timeout: bf.timeout}
	setup, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	n := *workloads
	if n <= 0 {
		n = min(bf.concurrency, 64)
	}
	if n > 10000 {
		return usageError{"--workloads must be at most 10000"}
	}
	// Credentials, and the keys the in-process receiver trusts for them.
	var (
		creds    []*wit.Credential
		trust    keys.KeySet
		issuerAl string
	)
	switch {
	case *witArg != "":
		c, err := loadCredential(*witArg, *keyFile, stdin)
		if err != nil {
			return err
		}
		creds = append(creds, c)
	case *issuerURL != "":
		wc, md, err := witissuer.NewClient(setup, hc, *issuerURL)
		if err != nil {
			return err
		}
		if *trustArg == "" {
			*trustArg = md.JWKSURI
		}
		for i := range n {
			c := *wc
			c.Subject = *prefix + "w" + strconv.Itoa(i+1)
			key, err := keys.Generate(*alg)
			if err != nil {
				return err
			}
			res, err := c.Request(setup, key)
			if err != nil {
				return fmt.Errorf("WIT for %s: %w", c.Subject, err)
			}
			creds = append(creds, &wit.Credential{WIT: res.WIT, Key: key, Expiry: time.Unix(res.ExpiresAt, 0)})
		}
		issuerAl = jwksAlgs(setup, hc, md.JWKSURI)
	default:
		// Self-contained: an issuer key made here, trusted by the in-process receiver.
		ik, err := keys.Generate(keys.ES256)
		if err != nil {
			return err
		}
		if trust, err = keys.NewStaticSet(ik.Public()); err != nil {
			return err
		}
		issuerAl = ik.Alg()
		iss := wit.NewIssuer("https://"+*td+"/bench-issuer", func() *keys.PrivateKey { return ik })
		for i := range n {
			id, err := identifier.Parse(*prefix + "w" + strconv.Itoa(i+1))
			if err != nil {
				return err
			}
			key, err := keys.Generate(*alg)
			if err != nil {
				return err
			}
			tok, c, err := iss.Issue(id, key.Public(), time.Hour)
			if err != nil {
				return err
			}
			creds = append(creds, &wit.Credential{WIT: tok, Key: key, Expiry: c.Exp.Time()})
		}
	}
	end := time.Now().Add(bf.warmup + bf.duration + 30*time.Second)
	for _, c := range creds {
		if c.Expiry.Before(end) {
			return errcode.New(errcode.Expired, "a WIT expires at %s, before the run ends", c.Expiry.Format(time.RFC3339))
		}
	}

	// Txn-Tokens: one per dialog from the TTS, cached by agent.TTSSource.
	var (
		ttsMD   *tts.Metadata
		ttsKeys keys.KeySet
	)
	if *ttsURL != "" {
		var err error
		if ttsMD, err = tts.Discover(setup, hc, *ttsURL); err != nil {
			return err
		}
		if *target == "" {
			if ttsKeys, err = keys.NewRemoteSet(ctx, ttsMD.JWKSURI, keys.WithHTTPClient(hc)); err != nil {
				return err
			}
		}
	}

	// The receiver: the one at --url, or one started here.
	url := *target
	inProcess := url == ""
	if inProcess {
		if trust == nil {
			var err error
			if trust, err = keySetArg(ctx, hc, *trustArg); err != nil {
				return err
			}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		url = "http://" + ln.Addr().String() + "/invoke"
		h, err := newReceiverHandler(receiverOptions{trust: trust, trustDomain: *td, audience: url, ttsKeys: ttsKeys, stateful: *stateful})
		if err != nil {
			ln.Close()
			return err
		}
		srv := httpserver.New(h)
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		bf.noMetrics = true // the process is the client and the server
	}

	type workerState struct {
		client *http.Client
		dc     *dialog.Context
	}
	responses := httpsig.NewVerifier(wit.NewValidator(keys.NewTrust()))
	states := make([]*workerState, bf.concurrency)
	for i := range states {
		cred := creds[i%len(creds)]
		id, err := witSubject(cred.WIT)
		if err != nil {
			return err
		}
		dc, err := dialog.New(rand.Text(), id)
		if err != nil {
			return err
		}
		src := staticSource{cred}
		tr := &agent.Transport{Base: hc.Transport, Source: src, Proof: proof, Responses: responses}
		if ttsMD != nil {
			c := &tts.Client{TokenEndpoint: ttsMD.TokenEndpoint, HTTPClient: hc, WITSource: src}
			issuer := ttsMD.Issuer
			tr.Tokens = agent.NewTTSSource(c, *td, *scope, func(ctx context.Context) (string, string, error) {
				tok, err := tts.NewSelfSignedToken(cred.Key, id, "alice@"+*td, issuer, *scope, 10*time.Minute, time.Now())
				return tok, tts.TokenTypeSelfSigned, err
			}, nil)
		}
		states[i] = &workerState{client: &http.Client{Transport: tr, Timeout: bf.timeout}, dc: dc}
	}
	body := []byte(`{"task":"bench"}`)
	op := func(ctx context.Context, w int) error {
		st := states[w]
		req, err := http.NewRequestWithContext(agent.WithDialog(ctx, st.dc), http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := st.client.Do(req)
		if err != nil {
			var ce *errcode.Error
			if errors.As(err, &ce) {
				return ce
			}
			return errcode.Unavailable(errcode.Unmapped, err, "request")
		}
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return problem.Read(res.StatusCode, b)
		}
		return nil
	}

	// The first request of each dialog establishes it (stateful receiver) and fetches
	// its Txn-Token: done before the clock starts, like the warm-up.
	for w := range states {
		if err := op(setup, w); err != nil {
			return fmt.Errorf("first request of worker %d: %w", w, err)
		}
	}
	watch := newServerWatch(hc, bf, strings.TrimSuffix(url, urlPath(url)), "dialogtrust_bench_receiver_verified_total")
	cfg := loadtest.Config{Concurrency: bf.concurrency, Duration: bf.duration, Warmup: bf.warmup, Rate: bf.rate}
	watch.config(&cfg, bf)
	res, err := loadtest.Run(ctx, cfg, op)
	if err != nil {
		return err
	}
	rep := &benchReport{Bench: "verify", URL: url, Proof: *proofArg, WorkloadAlg: creds[0].Key.Alg(), ServerAlg: issuerAl, Workloads: len(creds)}
	details := []string{"one dialog per worker, Dialog-Context covered by the proof"}
	if *ttsURL != "" {
		details = append(details, "a Txn-Token per dialog from "+ttsMD.Issuer+" (verified by the receiver, tctx.dlg checked)")
	}
	if inProcess {
		details = append(details, "receiver in this process (client CPU includes it)")
		if *stateful {
			details = append(details, "stateful (dialog registry)")
		}
	}
	rep.Details = strings.Join(details, "; ")
	srvStats := watch.stats(res)
	if inProcess {
		srvStats.Note = "receiver in this process: see client CPU"
	}
	rep.finish(res, srvStats, bf.warmup)
	if err := rep.write(stdout, bf.jsonOut); err != nil {
		return err
	}
	if res.OK == 0 {
		return silentFailure{"no request succeeded"}
	}
	return nil
}

// urlPath is the path part of an absolute URL ("" when it has none).
func urlPath(u string) string {
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return ""
}
