package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/loadtest"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// selfSignedRefresh: a worker mints a new self_signed subject token when its current
// one is this old (the TTS accepts one at most 10 minutes after its iat and caches it
// at most 5 minutes).
const selfSignedRefresh = 4 * time.Minute

// benchTTS: dialogtrust bench tts. A closed-loop load on a TTS token endpoint: each
// worker requests Txn-Tokens with a fresh proof (WPT, or HTTP signature) per request and
// a self_signed subject token, as fast as they are answered.
func benchTTS(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	a, err := parseBenchTTS(args, stderr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	r := &ttsRun{ttsArgs: a, hc: &http.Client{Transport: benchTransport(a.bench.concurrency), Timeout: a.bench.timeout}}
	setup, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.discover(setup); err != nil {
		return err
	}
	if err := r.credentials(setup, stdin); err != nil {
		return err
	}
	if err := checkOutlast(r.creds, a.bench); err != nil {
		return err
	}
	op, err := r.op()
	if err != nil {
		return err
	}
	res, srv, err := runBenchLoad(ctx, r.hc, a.bench, a.ttsURL, op, "dialogtrust_tts_issued_total", "dialogtrust_tts_refused_total")
	if err != nil {
		return err
	}
	rep := &benchReport{Bench: "tts", URL: r.md.TokenEndpoint, Proof: a.proof, WorkloadAlg: r.creds[0].Key.Alg(), ServerAlg: r.serverAlg, Workloads: len(r.creds), Details: r.details()}
	return writeBenchReport(stdout, rep, res, srv, a.bench)
}

// ttsArgs is the command line of "bench tts".
type ttsArgs struct {
	ttsURL, issuerURL, witArg, keyFile, prefix, alg string
	proof, audience, scope, subject                 string
	method                                          proof.Method
	workloads                                       int
	freshSubject, withDialog                        bool
	bench                                           *benchFlags
}

func parseBenchTTS(args []string, stderr io.Writer) (*ttsArgs, error) {
	a := &ttsArgs{}
	fs := newFlags("bench tts", stderr)
	fs.StringVar(&a.ttsURL, "url", "", "the TTS's base URL (its issuer identifier; metadata is read from it)")
	fs.StringVar(&a.issuerURL, "wit-issuer", "", "a WIT issuer in development mode: one WIT per workload is requested there")
	fs.StringVar(&a.witArg, "wit", "", "instead of --wit-issuer: the WIT (file, @file, value or -)")
	fs.StringVar(&a.keyFile, "key", "", "with --wit: its private JWK file")
	fs.IntVar(&a.workloads, "workloads", 0, "with --wit-issuer: distinct workloads, each with its own WIT (default: one per worker, at most 64)")
	fs.StringVar(&a.prefix, "workload-prefix", "wimse://dev.local/bench/", "with --wit-issuer: workload identifiers are this plus w1, w2, ...")
	fs.StringVar(&a.alg, "alg", keys.ES256, "with --wit-issuer: algorithm of the workload keys (ES256 or EdDSA)")
	fs.StringVar(&a.proof, "proof", proof.WPT.String(), "proof of possession: wpt or httpsig")
	fs.StringVar(&a.audience, "audience", "", "the requested trust domain (default: the TTS's first trust domain)")
	fs.StringVar(&a.scope, "scope", "trip.read", "the requested scope (also the subject token's)")
	fs.StringVar(&a.subject, "subject", "alice@dev.local", "sub of the self_signed subject tokens")
	fs.BoolVar(&a.freshSubject, "fresh-subject", false, "mint a new self_signed subject token for every request (the TTS's subject cache never hits)")
	fs.BoolVar(&a.withDialog, "dialog", true, "send request_details.dlg, a new dialog identifier per request")
	a.bench = addBenchFlags(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{"unexpected argument " + fs.Arg(0)}
	}
	if err := required(map[string]string{"url": a.ttsURL}); err != nil {
		return nil, err
	}
	if err := a.bench.check(); err != nil {
		return nil, err
	}
	if (a.issuerURL == "") == (a.witArg == "") {
		return nil, usageError{"give exactly one of --wit-issuer and --wit (with --key)"}
	}
	if (a.witArg == "") != (a.keyFile == "") {
		return nil, usageError{"--wit and --key go together"}
	}
	if a.proof != proof.WPT.String() && a.proof != proof.HTTPSig.String() {
		return nil, usageError{"--proof must be wpt or httpsig"}
	}
	a.method, _ = proof.Parse(a.proof)
	if err := checkAlg(a.alg); err != nil {
		return nil, err
	}
	return a, nil
}

// ttsRun is one run of "bench tts": what the setup found or made.
type ttsRun struct {
	*ttsArgs
	hc        *http.Client
	md        *oauth.Metadata
	aud       string // the requested trust domain
	serverAlg string
	creds     []*wit.Credential
}

// discover reads the TTS's metadata: its token endpoint, the audience to ask for and
// the algorithm it signs with.
func (r *ttsRun) discover(setup context.Context) error {
	md, err := ttsMetadata(setup, r.hc, r.ttsURL)
	if err != nil {
		return err
	}
	r.md, r.aud = md, r.audience
	if r.aud == "" {
		if len(md.TrustDomainsSupported) == 0 {
			return usageError{"the TTS names no trust domain: give --audience"}
		}
		r.aud = md.TrustDomainsSupported[0]
	}
	r.serverAlg = jwksAlgs(setup, r.hc, md.JWKSURI)
	return nil
}

// credentials gets one WIT and key per workload: from --wit, or from the WIT issuer.
func (r *ttsRun) credentials(setup context.Context, stdin io.Reader) error {
	if r.witArg != "" {
		c, err := loadCredential(r.witArg, r.keyFile, stdin)
		if err != nil {
			return err
		}
		r.creds = append(r.creds, c)
		return nil
	}
	n, err := workloadCount(r.workloads, r.bench.concurrency)
	if err != nil {
		return err
	}
	wc, _, err := witissuer.NewClient(setup, r.hc, r.issuerURL)
	if err != nil {
		return err
	}
	r.creds, err = requestWITs(setup, wc, r.prefix, r.alg, n)
	return err
}

// ttsWorker is one worker's TTS client and its current self_signed subject token.
type ttsWorker struct {
	client   *txntoken.Client
	cred     *wit.Credential
	workload identifier.ID
	subject  string
	minted   time.Time
}

// op makes each worker's client and returns the request a worker sends.
func (r *ttsRun) op() (loadtest.Op, error) {
	states := make([]*ttsWorker, r.bench.concurrency)
	for i := range states {
		cred := r.creds[i%len(r.creds)]
		wl, err := witSubject(cred.WIT)
		if err != nil {
			return nil, err
		}
		states[i] = &ttsWorker{cred: cred, workload: wl,
			client: &txntoken.Client{TokenEndpoint: r.md.TokenEndpoint, HTTPClient: r.hc, WIT: cred.WIT, Key: cred.Key, Proof: r.method}}
	}
	md, aud, scope, subject, freshSubject, withDialog := r.md, r.aud, r.scope, r.subject, r.freshSubject, r.withDialog
	return func(ctx context.Context, w int) error {
		st := states[w]
		now := time.Now()
		if freshSubject || st.subject == "" || now.Sub(st.minted) > selfSignedRefresh {
			tok, err := txntoken.NewSelfSignedToken(st.cred.Key, st.workload, subject, md.Issuer, scope, 10*time.Minute, now)
			if err != nil {
				return err
			}
			st.subject, st.minted = tok, now
		}
		req := txntoken.Request{Audience: aud, Scope: scope, SubjectToken: st.subject, SubjectTokenType: tts.TokenTypeSelfSigned}
		if withDialog {
			req.Dialog = rand.Text()
		}
		_, err := st.client.Request(ctx, req)
		return err
	}, nil
}

// details is the report's description of the run.
func (r *ttsRun) details() string {
	subj := "a self_signed subject token per worker, re-minted every 4 min (TTS subject cache warm)"
	if r.freshSubject {
		subj = "a new self_signed subject token per request (TTS subject cache cold)"
	}
	if r.withDialog {
		subj += "; a new dialog per request"
	}
	return "audience " + r.aud + ", scope " + strconv.Quote(r.scope) + "; " + subj
}

// jwksAlgs names the algorithms of the keys a JWKS publishes ("" when it cannot be
// read): which algorithm the TTS signs with.
func jwksAlgs(ctx context.Context, hc *http.Client, jwksURL string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return ""
	}
	res, err := hc.Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var set struct {
		Keys []struct {
			Alg string `json:"alg"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&set); err != nil {
		return ""
	}
	var algs []string
	for _, k := range set.Keys {
		if k.Alg != "" && !slices.Contains(algs, k.Alg) {
			algs = append(algs, k.Alg)
		}
	}
	return strings.Join(algs, ",")
}

// witExpiry reads a WIT's exp without verifying it: the bench checks its credentials
// outlast the run; the server verifies them.
func witExpiry(raw string) (time.Time, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return time.Time{}, errcode.New(errcode.MalformedToken, "the WIT is not a compact JWS")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, errcode.Wrap(errcode.InvalidEncoding, err, "WIT payload")
	}
	var c struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Exp == 0 {
		return time.Time{}, errcode.New(errcode.InvalidEncoding, "the WIT payload has no exp")
	}
	return time.Unix(c.Exp, 0), nil
}
