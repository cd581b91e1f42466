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

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/loadtest"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
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
	verified    func() // counts a verified request (bench receiver's metrics); nil: not counted
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
		opts = append(opts, dialog.WithTxnTokens(txntoken.NewVerifier(o.ttsKeys, o.trustDomain)), dialog.RequireTxnToken())
	}
	if o.stateful {
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())))
	}
	rc, err := dialog.NewReceiver(opts...)
	if err != nil {
		return nil, err
	}
	return rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.verified != nil {
			o.verified()
		}
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
	metrics := loadtest.NewReceiverMetrics()
	h, err := newReceiverHandler(receiverOptions{trust: trust, trustDomain: *td, audience: url, ttsKeys: ttsKeys, stateful: *stateful, verified: metrics.Verified})
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+*path, h)
	mux.Handle("GET /metrics", metrics.Handler())
	srv := httpserver.New(mux)
	fmt.Fprintf(stdout, "bench receiver on %s (pid %d, metrics on http://%s/metrics)\n", url, os.Getpid(), ln.Addr())
	return serveUntilDone(ctx, srv, ln)
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
	a, err := parseBenchVerify(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	r := &verifyRun{verifyArgs: a, hc: &http.Client{Transport: benchTransport(a.bench.concurrency), Timeout: a.bench.timeout}}
	setup, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.credentials(setup, stdin); err != nil {
		return err
	}
	if err := checkOutlast(r.creds, a.bench); err != nil {
		return err
	}
	if err := r.discoverTTS(ctx, setup); err != nil {
		return err
	}
	stop, err := r.startReceiver(ctx)
	if err != nil {
		return err
	}
	defer stop()
	op, err := r.op()
	if err != nil {
		return err
	}
	// The first request of each dialog establishes it (stateful receiver) and fetches
	// its Txn-Token: done before the clock starts, like the warm-up.
	for w := range a.bench.concurrency {
		if err := op(setup, w); err != nil {
			return fmt.Errorf("first request of worker %d: %w", w, err)
		}
	}
	res, srvStats, err := runBenchLoad(ctx, r.hc, a.bench, strings.TrimSuffix(r.url, urlPath(r.url)), op, "dialogtrust_bench_receiver_verified_total")
	if err != nil {
		return err
	}
	if r.inProcess {
		srvStats.Note = "receiver in this process: see client CPU"
	}
	rep := &benchReport{Bench: "verify", URL: r.url, Proof: a.proofName, WorkloadAlg: r.creds[0].Key.Alg(), ServerAlg: r.issuerAlg, Workloads: len(r.creds), Details: r.details()}
	return writeBenchReport(stdout, rep, res, srvStats, a.bench)
}

// verifyArgs is the command line of "bench verify".
type verifyArgs struct {
	target, issuerURL, witArg, keyFile, trustArg, td string
	prefix, alg, proofName, ttsURL, scope            string
	workloads                                        int // resolved: at least 1
	stateful                                         bool
	proof                                            proof.Method
	bench                                            *benchFlags
}

func parseBenchVerify(args []string, stderr io.Writer) (*verifyArgs, error) {
	a := &verifyArgs{}
	fs := newFlags("bench verify", stderr)
	fs.StringVar(&a.target, "url", "", "the protected endpoint (e.g. from bench receiver); default: start one in this process")
	fs.StringVar(&a.issuerURL, "wit-issuer", "", "a WIT issuer in development mode: one WIT per workload is requested there (default without --url: WITs minted in this process)")
	fs.StringVar(&a.witArg, "wit", "", "instead: the WIT (file, @file, value or -)")
	fs.StringVar(&a.keyFile, "key", "", "with --wit: its private JWK file")
	fs.StringVar(&a.trustArg, "trust", "", "in-process receiver with --wit-issuer or --wit: the WIT issuer's JWKS (default: the issuer's jwks_uri)")
	fs.StringVar(&a.td, "trust-domain", "dev.local", "the workloads' trust domain")
	fs.IntVar(&a.workloads, "workloads", 0, "distinct workloads, each with its own WIT (default: one per worker, at most 64)")
	fs.StringVar(&a.prefix, "workload-prefix", "", "workload identifiers are this plus w1, w2, ... (default wimse://TRUST-DOMAIN/bench/)")
	fs.StringVar(&a.alg, "alg", keys.ES256, "algorithm of the workload keys (ES256 or EdDSA)")
	fs.StringVar(&a.proofName, "proof", "httpsig", "proof of possession: httpsig or wpt")
	fs.StringVar(&a.ttsURL, "tts", "", "send a Txn-Token per dialog from this TTS (self_signed subject); the in-process receiver then requires them")
	fs.StringVar(&a.scope, "scope", "trip.read", "with --tts: the Txn-Tokens' scope")
	fs.BoolVar(&a.stateful, "stateful", false, "in-process receiver: keep a dialog registry")
	a.bench = addBenchFlags(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{"unexpected argument " + fs.Arg(0)}
	}
	if err := a.bench.check(); err != nil {
		return nil, err
	}
	if a.issuerURL != "" && a.witArg != "" {
		return nil, usageError{"--wit-issuer and --wit exclude each other"}
	}
	if (a.witArg == "") != (a.keyFile == "") {
		return nil, usageError{"--wit and --key go together"}
	}
	if a.target != "" && a.issuerURL == "" && a.witArg == "" {
		return nil, usageError{"with --url give --wit-issuer or --wit: the receiver must trust the WITs"}
	}
	switch a.proofName {
	case "httpsig":
		a.proof = proof.HTTPSig
	case "wpt":
		a.proof = proof.WPT
	default:
		return nil, usageError{"--proof must be httpsig or wpt"}
	}
	if err := checkAlg(a.alg); err != nil {
		return nil, err
	}
	if a.prefix == "" {
		a.prefix = "wimse://" + a.td + "/bench/"
	}
	var err error
	if a.workloads, err = workloadCount(a.workloads, a.bench.concurrency); err != nil {
		return nil, err
	}
	return a, nil
}

// verifyRun is one run of "bench verify": what the setup found or made.
type verifyRun struct {
	*verifyArgs
	hc        *http.Client
	creds     []*wit.Credential
	trust     keys.KeySet // what the in-process receiver trusts for the WITs; nil: from --trust
	issuerAlg string
	ttsMD     *oauth.Metadata // nil without --tts
	ttsKeys   keys.KeySet     // the in-process receiver's keys for the Txn-Tokens
	url       string          // the receiver's endpoint
	inProcess bool
}

// credentials gets the workloads' WITs and keys: from --wit, from the WIT issuer, or
// minted here by an issuer key that the in-process receiver then trusts.
func (r *verifyRun) credentials(setup context.Context, stdin io.Reader) error {
	switch {
	case r.witArg != "":
		c, err := loadCredential(r.witArg, r.keyFile, stdin)
		if err != nil {
			return err
		}
		r.creds = append(r.creds, c)
	case r.issuerURL != "":
		wc, md, err := witissuer.NewClient(setup, r.hc, r.issuerURL)
		if err != nil {
			return err
		}
		if r.trustArg == "" {
			r.trustArg = md.JWKSURI
		}
		if r.creds, err = requestWITs(setup, wc, r.prefix, r.alg, r.workloads); err != nil {
			return err
		}
		r.issuerAlg = jwksAlgs(setup, r.hc, md.JWKSURI)
	default:
		return r.mintWITs()
	}
	return nil
}

// mintWITs is the self-contained case: an issuer key made here, trusted by the
// in-process receiver, and one WIT per workload.
func (r *verifyRun) mintWITs() error {
	ik, err := keys.Generate(keys.ES256)
	if err != nil {
		return err
	}
	if r.trust, err = keys.NewStaticSet(ik.Public()); err != nil {
		return err
	}
	r.issuerAlg = ik.Alg()
	iss := wit.NewIssuer("https://"+r.td+"/bench-issuer", func() *keys.PrivateKey { return ik })
	for i := range r.workloads {
		id, err := identifier.Parse(r.prefix + "w" + strconv.Itoa(i+1))
		if err != nil {
			return err
		}
		key, err := keys.Generate(r.alg)
		if err != nil {
			return err
		}
		tok, c, err := iss.Issue(id, key.Public(), time.Hour)
		if err != nil {
			return err
		}
		r.creds = append(r.creds, &wit.Credential{WIT: tok, Key: key, Expiry: c.Exp.Time()})
	}
	return nil
}

// discoverTTS reads the TTS's metadata, and its keys for the in-process receiver: with
// --tts each dialog gets a Txn-Token, cached by agent.TTSSource.
func (r *verifyRun) discoverTTS(ctx, setup context.Context) error {
	if r.ttsURL == "" {
		return nil
	}
	var err error
	if r.ttsMD, err = ttsMetadata(setup, r.hc, r.ttsURL); err != nil {
		return err
	}
	if r.target == "" {
		if r.ttsKeys, err = keys.NewRemoteSet(ctx, r.ttsMD.JWKSURI, keys.WithHTTPClient(r.hc)); err != nil {
			return err
		}
	}
	return nil
}

// startReceiver starts the in-process receiver unless --url names one; stop ends it.
func (r *verifyRun) startReceiver(ctx context.Context) (stop func(), err error) {
	r.url = r.target
	r.inProcess = r.url == ""
	if !r.inProcess {
		return func() {}, nil
	}
	if r.trust == nil {
		if r.trust, err = keySetArg(ctx, r.hc, r.trustArg); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.url = "http://" + ln.Addr().String() + "/invoke"
	h, err := newReceiverHandler(receiverOptions{trust: r.trust, trustDomain: r.td, audience: r.url, ttsKeys: r.ttsKeys, stateful: r.stateful})
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := httpserver.New(h)
	go func() { _ = srv.Serve(ln) }()
	r.bench.noMetrics = true // the process is the client and the server
	return func() { srv.Close() }, nil
}

// verifyWorker is one worker's client, whose agent.Transport signs every request, and
// its dialog.
type verifyWorker struct {
	client *http.Client
	dc     *dialog.Context
}

// op makes each worker's client and dialog and returns the request a worker sends.
func (r *verifyRun) op() (loadtest.Op, error) {
	responses := httpsig.NewVerifier(wit.NewValidator(keys.NewTrust()))
	states := make([]*verifyWorker, r.bench.concurrency)
	for i := range states {
		cred := r.creds[i%len(r.creds)]
		id, err := witSubject(cred.WIT)
		if err != nil {
			return nil, err
		}
		dc, err := dialog.New(rand.Text(), id)
		if err != nil {
			return nil, err
		}
		src := cred // a credential read from files is its own wit.Source
		tr := &agent.Transport{Base: r.hc.Transport, Source: src, Proof: r.proof, Responses: responses}
		if r.ttsMD != nil {
			tr.Tokens = r.txnTokens(cred, id, src)
		}
		states[i] = &verifyWorker{client: &http.Client{Transport: tr, Timeout: r.bench.timeout}, dc: dc}
	}
	body := []byte(`{"task":"bench"}`)
	url := r.url
	return func(ctx context.Context, w int) error {
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
			return err // counted as connection_failed or timeout (loadtest)
		}
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return problem.Read(res.StatusCode, b)
		}
		return nil
	}, nil
}

// txnTokens is a worker's source of Txn-Tokens from the TTS, one per dialog, for a
// self_signed subject token of its workload.
func (r *verifyRun) txnTokens(cred *wit.Credential, id identifier.ID, src wit.Source) agent.TxnTokenSource {
	c := &txntoken.Client{TokenEndpoint: r.ttsMD.TokenEndpoint, HTTPClient: r.hc, WITSource: src, Proof: proof.WPT}
	issuer, td, scope := r.ttsMD.Issuer, r.td, r.scope
	return agent.NewTTSSource(c, td, scope, func(ctx context.Context) (string, string, error) {
		tok, err := txntoken.NewSelfSignedToken(cred.Key, id, "alice@"+td, issuer, scope, 10*time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}, nil)
}

// details is the report's description of the run.
func (r *verifyRun) details() string {
	details := []string{"one dialog per worker, Dialog-Context covered by the proof"}
	if r.ttsURL != "" {
		details = append(details, "a Txn-Token per dialog from "+r.ttsMD.Issuer+" (verified by the receiver, tctx.dlg checked)")
	}
	if r.inProcess {
		details = append(details, "receiver in this process (client CPU includes it)")
		if r.stateful {
			details = append(details, "stateful (dialog registry)")
		}
	}
	return strings.Join(details, "; ")
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
