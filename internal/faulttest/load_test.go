package faulttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// tokenEndpoint is what every proof names (wimse-aud, WPT aud): the common issuer's.
const tokenEndpoint = ttsIssuer + tts.PathToken

// workload is an agent with a key, its WIT and a self-signed subject token.
type workload struct {
	id     identifier.ID
	key    *keys.PrivateKey
	wit    string
	signer *httpsig.Signer
	// proofTTL, when set, is the lifetime of its WPTs and signatures (else the defaults).
	proofTTL time.Duration

	mu      sync.Mutex
	subject string
	minted  time.Time
}

// newWorkloads gets n WITs from the issuer (development method).
func newWorkloads(t *testing.T, issuer *service, n int) []*workload {
	return newWorkloadsTTL(t, issuer, n, 0)
}

// newWorkloadsTTL is newWorkloads whose proofs live proofTTL (0: the defaults).
func newWorkloadsTTL(t *testing.T, issuer *service, n int, proofTTL time.Duration) []*workload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := witissuer.NewClient(ctx, nil, issuer.url)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*workload, n)
	for i := range out {
		key, err := keys.Generate(keys.ES256)
		if err != nil {
			t.Fatal(err)
		}
		id := identifier.MustParse(fmt.Sprintf("wimse://%s/agent/a%d", trustDomain, i))
		wc := *c
		wc.Subject = id.String()
		res, err := wc.Request(ctx, key)
		if err != nil {
			t.Fatalf("WIT for %s: %v", id, err)
		}
		var sopts []httpsig.SignerOption
		if proofTTL > 0 {
			sopts = append(sopts, httpsig.WithTTL(proofTTL))
		}
		out[i] = &workload{id: id, key: key, wit: res.WIT, signer: httpsig.NewSigner(key, res.WIT, sopts...), proofTTL: proofTTL}
	}
	return out
}

// subjectToken returns a self_signed subject token, minted again every minute (the TTS
// caches validated subject tokens and wants iat at most ten minutes old).
func (w *workload) subjectToken() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subject != "" && time.Since(w.minted) < time.Minute {
		return w.subject, nil
	}
	now := time.Now()
	s, err := txntoken.NewSelfSignedToken(w.key, w.id, "user@"+trustDomain, ttsIssuer, "read write", 10*time.Minute, now)
	if err != nil {
		return "", err
	}
	w.subject, w.minted = s, now
	return s, nil
}

// prepared is a signed token request that can be sent (and sent again) to any replica.
type prepared struct {
	body   string
	header http.Header
	proof  string
}

// tokenRequest builds a Txn-Token request of w, authenticated with a fresh proof (a WPT
// or a WIMSE HTTP signature).
func (w *workload) tokenRequest(proof, dialog string) (*prepared, error) {
	subj, err := w.subjectToken()
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":           {tts.GrantTypeTokenExchange},
		"requested_token_type": {tts.TokenTypeTxnToken},
		"audience":             {trustDomain},
		"scope":                {"read"},
		"subject_token":        {subj},
		"subject_token_type":   {tts.TokenTypeSelfSigned},
		"request_details":      {`{"dlg":"` + dialog + `"}`},
	}
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, tokenEndpoint, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	switch proof {
	case "wpt":
		var mopts []wpt.MintOption
		if w.proofTTL > 0 {
			mopts = append(mopts, wpt.WithTTL(w.proofTTL))
		}
		err = wpt.SignRequest(req, w.key, w.wit, tokenEndpoint, wpt.RequestOptions{}, mopts...)
	case "httpsig":
		_, err = w.signer.SignRequest(req, tokenEndpoint)
	default:
		err = fmt.Errorf("unknown proof %q", proof)
	}
	if err != nil {
		return nil, err
	}
	return &prepared{body: body, header: req.Header.Clone(), proof: proof}, nil
}

// witRequest builds a WIT request for a new key of w's identity.
func witRequest(audience string, w *workload) (*prepared, error) {
	p, _, err := witRequestKey(audience, w)
	return p, err
}

// witRequestKey is witRequest, and the new key.
func witRequestKey(audience string, w *workload) (*prepared, *keys.PrivateKey, error) {
	key, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, nil, err
	}
	jws, err := witissuer.NewRequestJWS(key, witissuer.RequestParams{Audience: audience, Subject: w.id.String()})
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(witissuer.RequestBody{Request: jws})
	if err != nil {
		return nil, nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	return &prepared{body: string(b), header: h, proof: "wit"}, key, nil
}

// outcome is what became of one request.
type outcome struct {
	start, end time.Time
	status     int
	// From the error document: the OAuth error (TTS) or problem title, and dialogtrust's
	// code and kind.
	oauth, code, kind string
	retryAfter        string
	// token is the issued Txn-Token or WIT (only when the caller keeps it).
	token string
	// netErr classifies a request that got no HTTP answer.
	netErr string
	req    *prepared
}

func (o *outcome) ok() bool { return o.netErr == "" && o.status == http.StatusOK }

// label names the outcome for the counts: "200", "503 store_unavailable", "net
// conn_refused", ...
func (o *outcome) label() string {
	switch {
	case o.netErr != "":
		return "net " + o.netErr
	case o.status == http.StatusOK:
		return "200"
	case o.code != "":
		return fmt.Sprintf("%d %s", o.status, o.code)
	}
	return fmt.Sprintf("%d", o.status)
}

// couldNotComplete: the answer the store outage must produce, in the TTS's OAuth form
// (temporarily_unavailable) or the issuer's problem form.
func (o *outcome) storeUnavailable() bool {
	return o.netErr == "" && o.status == http.StatusServiceUnavailable && o.code == "store_unavailable" && o.kind == "could_not_complete"
}

// classify names a transport error.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conn_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "conn_reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken_pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(err.Error(), "server closed idle connection"):
		return "server_closed_idle"
	}
	return "other: " + err.Error()
}

// requestTimeout bounds every request: a hang is an error, never a stuck test.
const requestTimeout = 10 * time.Second

// newClient is a keep-alive client for up to conns concurrent connections.
func newClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute},
		Timeout:   requestTimeout,
	}
}

// send posts p to base+path and records the outcome; keep keeps the token.
func send(hc *http.Client, base, path string, p *prepared, keep bool) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(p.body))
	if err != nil {
		return outcome{start: time.Now(), end: time.Now(), netErr: "other: " + err.Error(), req: p}
	}
	req.Header = p.header.Clone()
	o := outcome{start: time.Now(), req: p}
	res, err := hc.Do(req)
	if err != nil {
		o.end = time.Now()
		o.netErr = classify(err)
		return o
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	o.end = time.Now()
	if err != nil {
		o.netErr = classify(err)
		return o
	}
	o.status = res.StatusCode
	o.retryAfter = res.Header.Get("Retry-After")
	if res.StatusCode == http.StatusOK {
		if keep {
			var r struct {
				AccessToken string `json:"access_token"`
				WIT         string `json:"wit"`
			}
			if json.Unmarshal(b, &r) == nil {
				o.token = r.AccessToken + r.WIT
			}
		}
		return o
	}
	var e struct {
		Error string `json:"error"`
		Title string `json:"title"`
		Code  string `json:"code"`
		Kind  string `json:"kind"`
	}
	if json.Unmarshal(b, &e) == nil {
		o.oauth, o.code, o.kind = e.Error+e.Title, e.Code, e.Kind
	}
	return o
}

// counts tallies outcomes by label.
type counts map[string]int

func (c counts) add(o *outcome) { c[o.label()]++ }

func (c counts) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, c[k])
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func (c counts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// recorder keeps the outcomes of a run, one slice per worker (no lock on the hot
// path), up to a bound.
type recorder struct {
	mu  sync.Mutex // all may run while the workers add
	per [][]outcome
	max int
}

func newRecorder(workers, maxPerWorker int) *recorder {
	return &recorder{per: make([][]outcome, workers), max: maxPerWorker}
}

func (r *recorder) add(w int, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.per[w]) < r.max {
		r.per[w] = append(r.per[w], o)
	}
}

func (r *recorder) all() []outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []outcome
	for _, p := range r.per {
		out = append(out, p...)
	}
	slices.SortFunc(out, func(a, b outcome) int { return a.start.Compare(b.start) })
	return out
}

// firstOKSince reports the start of the earliest request sent at or after since that
// succeeded.
func (r *recorder) firstOKSince(since time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for _, p := range r.per {
		for i := range p {
			if o := &p[i]; o.ok() && !o.start.Before(since) && (first.IsZero() || o.start.Before(first)) {
				first = o.start
			}
		}
	}
	return first, !first.IsZero()
}

// replayDecided is replayAll, with every copy answered 503 store_unavailable sent again
// (up to five more rounds, 200 ms apart) until the store decides it: on a busy machine a
// claim can time out, and a copy the store could not judge proves nothing either way.
func replayDecided(hc *http.Client, base, path string, reqs []*prepared, conc int) []outcome {
	out := replayAll(hc, base, path, reqs, conc)
	for round := 0; round < 5; round++ {
		var again []int
		for i := range out {
			if out[i].storeUnavailable() {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
		sub := make([]*prepared, len(again))
		for j, i := range again {
			sub[j] = reqs[i]
		}
		for j, o := range replayAll(hc, base, path, sub, conc) {
			out[again[j]] = o
		}
	}
	return out
}

// runWorkers runs op on each of n workers until stop is set, ctx ends or a worker has
// made maxOps requests (every loop is bounded in count and in time). With pace set, a
// worker waits for a permit before each request.
func runWorkers(ctx context.Context, n, maxOps int, stop *atomic.Bool, pace <-chan struct{}, op func(w, i int)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := 0; i < maxOps && !stop.Load() && ctx.Err() == nil; i++ {
				if pace != nil {
					select {
					case <-pace:
					case <-ctx.Done():
						return
					}
					if stop.Load() {
						return
					}
				}
				op(w, i)
			}
		})
	}
	return &wg
}

// pacer releases rate permits per second into the returned channel until ctx ends. It
// is a plain ticker (golang.org/x/time is not a dependency): every 5 ms it adds the
// permits the elapsed time earned. A permit that finds the buffer full (every worker
// busy and burst permits already waiting) is dropped and counted: the server could not
// keep the pace.
func pacer(ctx context.Context, rate float64, burst int) (<-chan struct{}, *atomic.Int64) {
	ch := make(chan struct{}, burst)
	var dropped atomic.Int64
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		credit := 0.0
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				credit += rate * now.Sub(last).Seconds()
				last = now
				for ; credit >= 1; credit-- {
					select {
					case ch <- struct{}{}:
					default:
						dropped.Add(1)
					}
				}
			}
		}
	}()
	return ch, &dropped
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	i = max(0, min(len(sorted)-1, i))
	return sorted[i]
}

// replayAll sends every prepared request again with conc workers and returns the
// outcomes, in the order of reqs.
func replayAll(hc *http.Client, base, path string, reqs []*prepared, conc int) []outcome {
	out := make([]outcome, len(reqs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				out[i] = send(hc, base, path, reqs[i], true)
			}
		})
	}
	wg.Wait()
	return out
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
