package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/loadtest"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
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
// a subject token (self_signed, or an external signed JWT: an access token or ID token
// the bench signs as an identity provider, or one given), as fast as they are answered.
// The replay store is the server's: the same command measures a TTS run with
// store.type memory or redis.
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
	if err := r.loadSubject(stdin); err != nil {
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

	// External subject JWTs (--subject-type access_token or id_token).
	subjectType, subjectKeyFile, subjectIssuer string
	subjectAudience, subjectTyp, subjectToken  string
	serverStore                                string
	subjectKey                                 *keys.PrivateKey
}

// The subject token types of --subject-type.
const (
	subjectSelfSigned  = "self_signed"
	subjectAccessToken = "access_token"
	subjectIDToken     = "id_token"
)

// benchTTSHelp follows the flags in "bench tts --help".
const benchTTSHelp = `
Subject tokens: by default each worker sends a self_signed token (--subject), re-minted
every 4 minutes (--fresh-subject: one per request). --subject-type access_token or
id_token sends external signed JWTs instead: either one given token, reused for every
request (--subject-token), or tokens this command signs as an identity provider with
--subject-key and --subject-issuer, one per worker re-minted every 4 minutes, or one per
request with --fresh-subject. The TTS must trust that issuer (subject_tokens.jwt_issuers
with the public key: "dialogtrust key public --in KEY" gives the JWK; put it in a JWKS
file, {"keys":[...]}, named by jwks_file) and its policy must allow the subject token
type for the workloads.

Replay store: the TTS's own (store.type memory or redis in its configuration, or
DIALOGTRUST_TTS_STORE=redis DIALOGTRUST_TTS_REDIS_ADDRS=host:port). To compare them,
run one TTS of each on two ports and alternate short runs against them, naming the
store with --server-store so that the report records it.
`

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
	fs.StringVar(&a.subjectType, "subject-type", subjectSelfSigned, "subject token type: self_signed, access_token or id_token (external signed JWTs)")
	fs.StringVar(&a.subjectKeyFile, "subject-key", "", "with access_token or id_token: private JWK file this command signs the subject JWTs with")
	fs.StringVar(&a.subjectIssuer, "subject-issuer", "", "with --subject-key: iss of the subject JWTs (a jwt_issuers entry of the TTS)")
	fs.StringVar(&a.subjectAudience, "subject-audience", "", "with --subject-key: aud of the subject JWTs (default: the TTS's issuer identifier)")
	fs.StringVar(&a.subjectTyp, "subject-typ", "", "with --subject-key: JOSE typ of the subject JWTs (default at+jwt for access_token, JWT for id_token)")
	fs.StringVar(&a.subjectToken, "subject-token", "", "with access_token or id_token, instead of --subject-key: one subject JWT (file, @file, value or -) sent with every request")
	fs.StringVar(&a.serverStore, "server-store", "", "the TTS's replay store (memory, redis, ...), recorded in the report; the command does not choose it")
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
	if err := a.checkSubject(); err != nil {
		return nil, err
	}
	return a, nil
}

// checkSubject checks the subject token flags together.
func (a *ttsArgs) checkSubject() error {
	external := a.subjectKeyFile != "" || a.subjectToken != "" || a.subjectIssuer != "" || a.subjectAudience != "" || a.subjectTyp != ""
	switch a.subjectType {
	case subjectSelfSigned:
		if external {
			return usageError{"--subject-key, --subject-token, --subject-issuer, --subject-audience and --subject-typ need --subject-type access_token or id_token"}
		}
		return nil
	case subjectAccessToken, subjectIDToken:
	default:
		return usageError{"--subject-type must be self_signed, access_token or id_token"}
	}
	switch {
	case (a.subjectKeyFile == "") == (a.subjectToken == ""):
		return usageError{"--subject-type " + a.subjectType + ": give exactly one of --subject-key (with --subject-issuer) and --subject-token"}
	case a.subjectKeyFile != "" && a.subjectIssuer == "":
		return usageError{"--subject-key needs --subject-issuer"}
	case a.subjectToken != "" && (a.subjectIssuer != "" || a.subjectAudience != "" || a.subjectTyp != ""):
		return usageError{"--subject-issuer, --subject-audience and --subject-typ go with --subject-key, not --subject-token"}
	case a.subjectToken != "" && a.freshSubject:
		return usageError{"--fresh-subject needs --subject-key: a given --subject-token is the same for every request"}
	}
	if a.subjectTyp == "" {
		a.subjectTyp = "JWT"
		if a.subjectType == subjectAccessToken {
			a.subjectTyp = "at+jwt"
		}
	}
	return nil
}

// subjectTokenType is the URN sent as subject_token_type.
func (a *ttsArgs) subjectTokenType() string {
	switch a.subjectType {
	case subjectAccessToken:
		return tts.TokenTypeAccessToken
	case subjectIDToken:
		return tts.TokenTypeIDToken
	}
	return tts.TokenTypeSelfSigned
}

// loadSubject reads --subject-key or --subject-token.
func (r *ttsRun) loadSubject(stdin io.Reader) error {
	switch {
	case r.subjectKeyFile != "":
		k, err := loadPrivateKey(r.subjectKeyFile, stdin)
		if err != nil {
			return err
		}
		r.subjectKey = k
		if r.subjectAudience == "" {
			r.subjectAudience = r.md.Issuer
		}
	case r.subjectToken != "":
		raw := r.subjectToken
		if !strings.HasPrefix(raw, "@") && raw != "-" && strings.Count(raw, ".") != 2 {
			if b, err := os.ReadFile(raw); err == nil {
				raw = strings.TrimSpace(string(b))
			}
		}
		v, err := readValue(raw, stdin)
		if err != nil {
			return err
		}
		r.subjectToken = v
	}
	return nil
}

// externalSubject signs a subject JWT as the identity provider of --subject-key: the
// claims an RFC 9068 access token or an ID token carries that the TTS reads.
func (r *ttsRun) externalSubject(now time.Time) (string, error) {
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(10*time.Minute).Unix())
	c := map[string]any{"iss": r.subjectIssuer, "sub": r.subject, "aud": r.subjectAudience, "iat": &iat, "exp": &exp,
		"jti": rand.Text(), "scope": r.scope}
	if r.subjectType == subjectAccessToken {
		c["client_id"] = "dialogtrust-bench"
	}
	return jose.SignClaims(r.subjectTyp, r.subjectKey, true, c)
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
	subjectType, given := r.subjectTokenType(), r.subjectToken
	mint := func(st *ttsWorker, now time.Time) (string, error) {
		if r.subjectKey != nil {
			return r.externalSubject(now)
		}
		return txntoken.NewSelfSignedToken(st.cred.Key, st.workload, subject, md.Issuer, scope, 10*time.Minute, now)
	}
	return func(ctx context.Context, w int) error {
		st := states[w]
		now := time.Now()
		if given != "" {
			st.subject = given
		} else if freshSubject || st.subject == "" || now.Sub(st.minted) > selfSignedRefresh {
			tok, err := mint(st, now)
			if err != nil {
				return err
			}
			st.subject, st.minted = tok, now
		}
		req := txntoken.Request{Audience: aud, Scope: scope, SubjectToken: st.subject, SubjectTokenType: subjectType}
		if withDialog {
			req.Dialog = rand.Text()
		}
		_, err := st.client.Request(ctx, req)
		return err
	}, nil
}

// details is the report's description of the run.
func (r *ttsRun) details() string {
	kind := r.subjectType + " subject token"
	if r.subjectType != subjectSelfSigned {
		kind = "external " + r.subjectType + " subject JWT (" + r.subjectTyp + ", iss " + r.subjectIssuer + ")"
	}
	subj := "a " + kind + " per worker, re-minted every 4 min (TTS subject cache warm)"
	switch {
	case r.subjectToken != "":
		subj = "one given " + r.subjectType + " subject JWT for every request (TTS subject cache warm)"
	case r.freshSubject:
		subj = "a new " + kind + " per request (TTS subject cache cold)"
	}
	if r.withDialog {
		subj += "; a new dialog per request"
	}
	if r.serverStore != "" {
		subj += "; server replay store " + r.serverStore
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
