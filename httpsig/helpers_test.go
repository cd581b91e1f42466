package httpsig

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dunglas/httpsfv"
)

const (
	testAudience = "https://server.example/api"
	testURL      = "https://server.example/api/transfer"
)

// party is a workload: its key, its WIT and a Signer for them.
type party struct {
	key    *keys.PrivateKey
	wit    string
	signer *Signer
}

// fixture is one trust domain with a client and a server, and a clock tests move.
type fixture struct {
	t         testing.TB
	clk       *testkit.Clock
	issuerKey *keys.PrivateKey
	validator *wit.Validator
	client    party
	server    party
}

func newFixture(t testing.TB, alg string) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: testkit.NewClock(time.Unix(1_800_000_000, 0))}
	var err error
	if f.issuerKey, err = keys.Generate(alg); err != nil {
		t.Fatal(err)
	}
	trust := keys.NewTrust().AddTrustDomain("example.org", f.issuerKey.Public())
	f.validator = wit.NewValidator(trust, wit.WithClock(f.clock), wit.WithSkew(5*time.Second))
	f.client = f.party(alg, "spiffe://example.org/client")
	f.server = f.party(alg, "spiffe://example.org/server")
	return f
}

func (f *fixture) clock() time.Time { return f.clk.Now() }

func (f *fixture) advance(d time.Duration) { f.clk.Advance(d) }

func (f *fixture) party(alg, sub string) party { return f.partyTTL(alg, sub, time.Hour) }

// partyTTL is a workload whose WIT lives for ttl.
func (f *fixture) partyTTL(alg, sub string, ttl time.Duration) party {
	f.t.Helper()
	k, err := keys.Generate(alg)
	if err != nil {
		f.t.Fatal(err)
	}
	iss := wit.NewIssuer("https://issuer.example", func() *keys.PrivateKey { return f.issuerKey }, wit.WithClock(f.clock))
	w, _, err := iss.Issue(identifier.MustParse(sub), k.Public(), ttl)
	if err != nil {
		f.t.Fatal(err)
	}
	return party{key: k, wit: w, signer: NewSigner(k, w, WithClock(f.clock))}
}

func (f *fixture) verifier(opts ...VerifierOption) *Verifier {
	return NewVerifier(f.validator, append([]VerifierOption{WithAudiences(testAudience)}, opts...)...)
}

// newRequest is a client request with an in-memory body ("" for none).
func newRequest(t testing.TB, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// onTheWire returns req as a server parses it after net/http has sent it.
func onTheWire(t testing.TB, req *http.Request) *http.Request {
	t.Helper()
	out := req.Clone(context.Background())
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		out.Body = b
	}
	var buf bytes.Buffer
	if err := out.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// signedRequest is a POST with a JSON body signed by the client, as the server sees it.
func (f *fixture) signedRequest(opts ...RequestOption) (*http.Request, string) {
	f.t.Helper()
	req := newRequest(f.t, http.MethodPost, testURL, `{"amount":100}`)
	req.Header.Set("Content-Type", "application/json")
	nonce, err := f.client.signer.SignRequest(req, testAudience, opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	return onTheWire(f.t, req), nonce
}

// response is what a client receives.
func response(status int, h http.Header, body string) *http.Response {
	return &http.Response{
		StatusCode: status, Header: h, ContentLength: int64(len(body)),
		Body: io.NopCloser(strings.NewReader(body)),
	}
}

func wantCode(t testing.TB, err error, code errcode.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want %s", code)
	}
	if got := errcode.CodeOf(err); got != code {
		t.Fatalf("rejected with %s, want %s: %v", got, code, err)
	}
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("rejected: %v", err)
	}
}

// memReplay is a minimal store.Replay for these tests.
type memReplay struct {
	mu   sync.Mutex
	seen map[string]time.Duration
	err  error
}

func newMemReplay() *memReplay { return &memReplay{seen: map[string]time.Duration{}} }

func (m *memReplay) Claim(_ context.Context, key string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if ttl <= 0 {
		return errcode.New(errcode.InvalidRequest, "ttl must be positive")
	}
	if _, ok := m.seen[key]; ok {
		return errcode.New(errcode.Replayed, "value already used")
	}
	m.seen[key] = ttl
	return nil
}

var errDown = errors.New("connection refused")

// resign replaces the signature of h with one over comps and p by key (test messages
// that a correct signer would never make).
func resignRequest(t testing.TB, key *keys.PrivateKey, req *http.Request, label string, comps []string, p Params) {
	t.Helper()
	req.Header.Del("Signature-Input")
	req.Header.Del("Signature")
	si, sig, err := SignRequestWithParams(key, label, comps, p, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Signature-Input", si)
	req.Header.Set("Signature", sig)
}

// params are the parameters a Signer would use now.
func (f *fixture) params() Params {
	c := f.clock().Unix()
	return Params{Created: c, Expires: c + 60, Nonce: randomNonce(), Tag: Tag, Audience: testAudience}
}

func readCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

// parseMember returns the inner list of the "wimse" member of a Signature-Input.
func parseMember(vals []string) (httpsfv.InnerList, error) {
	d, err := httpsfv.UnmarshalDictionary(vals)
	if err != nil {
		return httpsfv.InnerList{}, err
	}
	m, ok := d.Get("wimse")
	if !ok {
		return httpsfv.InnerList{}, errors.New("no wimse member")
	}
	return m.(httpsfv.InnerList), nil
}

// setInput replaces Signature-Input with label=il (the signature is left as it was).
func setInput(t testing.TB, req *http.Request, label string, il httpsfv.InnerList) {
	t.Helper()
	d := httpsfv.NewDictionary()
	d.Add(label, il)
	s, err := httpsfv.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Signature-Input", s)
}

func itemOf(s string) (httpsfv.Item, error) { return httpsfv.UnmarshalItem([]string{s}) }

// b64 is the encoding of RFC 8941 byte sequences.
var b64 = base64.StdEncoding
