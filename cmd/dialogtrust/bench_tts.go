package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/loadtest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tts"
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
	fs := newFlags("bench tts", stderr)
	ttsURL := fs.String("url", "", "the TTS's base URL (its issuer identifier; metadata is read from it)")
	issuerURL := fs.String("wit-issuer", "", "a WIT issuer in development mode: one WIT per workload is requested there")
	witArg := fs.String("wit", "", "instead of --wit-issuer: the WIT (file, @file, value or -)")
	keyFile := fs.String("key", "", "with --wit: its private JWK file")
	workloads := fs.Int("workloads", 0, "with --wit-issuer: distinct workloads, each with its own WIT (default: one per worker, at most 64)")
	prefix := fs.String("workload-prefix", "wimse://dev.local/bench/", "with --wit-issuer: workload identifiers are this plus w1, w2, ...")
	alg := fs.String("alg", keys.ES256, "with --wit-issuer: algorithm of the workload keys (ES256 or EdDSA)")
	proofArg := fs.String("proof", proof.WPT.String(), "proof of possession: wpt or httpsig")
	audience := fs.String("audience", "", "the requested trust domain (default: the TTS's first trust domain)")
	scope := fs.String("scope", "trip.read", "the requested scope (also the subject token's)")
	subject := fs.String("subject", "alice@dev.local", "sub of the self_signed subject tokens")
	freshSubject := fs.Bool("fresh-subject", false, "mint a new self_signed subject token for every request (the TTS's subject cache never hits)")
	withDialog := fs.Bool("dialog", true, "send request_details.dlg, a new dialog identifier per request")
	bf := addBenchFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{"unexpected argument " + fs.Arg(0)}
	}
	if err := required(map[string]string{"url": *ttsURL}); err != nil {
		return err
	}
	if err := bf.check(); err != nil {
		return err
	}
	if (*issuerURL == "") == (*witArg == "") {
		return usageError{"give exactly one of --wit-issuer and --wit (with --key)"}
	}
	if (*witArg == "") != (*keyFile == "") {
		return usageError{"--wit and --key go together"}
	}
	if *proofArg != proof.WPT.String() && *proofArg != proof.HTTPSig.String() {
		return usageError{"--proof must be wpt or httpsig"}
	}
	pm, err := proof.Parse(*proofArg)
	if err != nil {
		return err
	}
	if err := checkAlg(*alg); err != nil {
		return err
	}
	ctx := context.Background()
	hc := &http.Client{Transport: benchTransport(bf.concurrency), Timeout: bf.timeout}
	setup, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	md, err := tts.Discover(setup, hc, *ttsURL)
	if err != nil {
		return err
	}
	aud := *audience
	if aud == "" {
		if len(md.TrustDomainsSupported) == 0 {
			return usageError{"the TTS names no trust domain: give --audience"}
		}
		aud = md.TrustDomainsSupported[0]
	}
	serverAlg := jwksAlgs(setup, hc, md.JWKSURI)

	// Credentials: one WIT and key per workload.
	var creds []*wit.Credential
	if *witArg != "" {
		c, err := loadCredential(*witArg, *keyFile, stdin)
		if err != nil {
			return err
		}
		creds = append(creds, c)
	} else {
		n := *workloads
		if n <= 0 {
			n = min(bf.concurrency, 64)
		}
		if n > 10000 {
			return usageError{"--workloads must be at most 10000"}
		}
		wc, _, err := witissuer.NewClient(setup, hc, *issuerURL)
		if err != nil {
			return err
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
	}
	end := time.Now().Add(bf.warmup + bf.duration + 30*time.Second)
	for _, c := range creds {
		if c.Expiry.Before(end) {
			return errcode.New(errcode.Expired, "a WIT expires at %s, before the run ends", c.Expiry.Format(time.RFC3339))
		}
	}

	type workerState struct {
		client   *tts.Client
		cred     *wit.Credential
		workload identifier.ID
		subject  string
		minted   time.Time
	}
	states := make([]*workerState, bf.concurrency)
	for i := range states {
		cred := creds[i%len(creds)]
		wl, err := witSubject(cred.WIT)
		if err != nil {
			return err
		}
		states[i] = &workerState{cred: cred, workload: wl,
			client: &tts.Client{TokenEndpoint: md.TokenEndpoint, HTTPClient: hc, WIT: cred.WIT, Key: cred.Key, Proof: pm}}
	}
	op := func(ctx context.Context, w int) error {
		st := states[w]
		now := time.Now()
		if *freshSubject || st.subject == "" || now.Sub(st.minted) > selfSignedRefresh {
			tok, err := tts.NewSelfSignedToken(st.cred.Key, st.workload, *subject, md.Issuer, *scope, 10*time.Minute, now)
			if err != nil {
				return err
			}
			st.subject, st.minted = tok, now
		}
		r := tts.Request{Audience: aud, Scope: *scope, SubjectToken: st.subject, SubjectTokenType: tts.TokenTypeSelfSigned}
		if *withDialog {
			r.Dialog = rand.Text()
		}
		_, err := st.client.Request(ctx, r)
		return err
	}

	watch := newServerWatch(hc, bf, *ttsURL, "dialogtrust_tts_issued_total", "dialogtrust_tts_refused_total")
	cfg := loadtest.Config{Concurrency: bf.concurrency, Duration: bf.duration, Warmup: bf.warmup, Rate: bf.rate}
	watch.config(&cfg, bf)
	res, err := loadtest.Run(ctx, cfg, op)
	if err != nil {
		return err
	}
	rep := &benchReport{Bench: "tts", URL: md.TokenEndpoint, Proof: *proofArg, WorkloadAlg: creds[0].Key.Alg(), ServerAlg: serverAlg, Workloads: len(creds)}
	subj := "a self_signed subject token per worker, re-minted every 4 min (TTS subject cache warm)"
	if *freshSubject {
		subj = "a new self_signed subject token per request (TTS subject cache cold)"
	}
	if *withDialog {
		subj += "; a new dialog per request"
	}
	rep.Details = "audience " + aud + ", scope " + strconv.Quote(*scope) + "; " + subj
	rep.finish(res, watch.stats(res), bf.warmup)
	if err := rep.write(stdout, bf.jsonOut); err != nil {
		return err
	}
	if res.OK == 0 {
		return silentFailure{"no request succeeded"}
	}
	return nil
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
