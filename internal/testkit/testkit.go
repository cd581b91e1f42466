package testkit

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Clock is a settable clock; tests move it instead of sleeping.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Epoch is the fixed start of test clocks.
var Epoch = time.Unix(1_800_000_000, 0)

// Domain is one trust domain: its WIT issuer key and the trust configuration that
// trusts it.
type Domain struct {
	Name   string
	Key    *keys.PrivateKey
	Issuer *wit.Issuer
	Trust  *keys.Trust
	Clock  *Clock
}

// NewDomain creates trust domain td with a fresh issuer key of alg.
func NewDomain(tb testing.TB, td, alg string, clock *Clock) *Domain {
	tb.Helper()
	k, err := keys.Generate(alg)
	if err != nil {
		tb.Fatal(err)
	}
	set, err := keys.NewStaticSet(k.Public())
	if err != nil {
		tb.Fatal(err)
	}
	trust := keys.NewTrust().AddTrustDomain(td, set)
	iss := wit.NewIssuer("https://"+td+"/wit-issuer", func() *keys.PrivateKey { return k }, wit.WithClock(clock.Now))
	return &Domain{Name: td, Key: k, Issuer: iss, Trust: trust, Clock: clock}
}

// TrustWITsOf makes d's trust accept the WITs of other's issuer too (a federation):
// other's workloads authenticate where d's validators check.
func (d *Domain) TrustWITsOf(tb testing.TB, other *Domain) {
	tb.Helper()
	set, err := keys.NewStaticSet(other.Key.Public())
	if err != nil {
		tb.Fatal(err)
	}
	d.Trust.AddTrustDomain(other.Name, set)
}

// Validator returns a WIT validator for this domain's trust and clock.
func (d *Domain) Validator(opts ...wit.ValidatorOption) *wit.Validator {
	return wit.NewValidator(d.Trust, append([]wit.ValidatorOption{wit.WithClock(d.Clock.Now)}, opts...)...)
}

// Workload is a workload with its key and WIT.
type Workload struct {
	ID  identifier.ID
	Key *keys.PrivateKey
	WIT string
}

// Workload issues a WIT for path in this domain with a fresh key of alg.
func (d *Domain) Workload(tb testing.TB, path, alg string) *Workload {
	tb.Helper()
	id, err := identifier.Parse("wimse://" + d.Name + path)
	if err != nil {
		tb.Fatal(err)
	}
	k, err := keys.Generate(alg)
	if err != nil {
		tb.Fatal(err)
	}
	tok, _, err := d.Issuer.Issue(id, k.Public(), time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	return &Workload{ID: id, Key: k, WIT: tok}
}

// SyncBuffer is a bytes.Buffer safe for a server's goroutines: tests hand it to a
// logger or a command's stdout and stderr and read it while the server runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BenchHandlerAndFloor runs a handler and its crypto floor interleaved, b.N times: one
// request, then one floor, so that both see the same machine. prepare(i) builds the
// i-th request outside the handler's time (that is the client's and net/http's work,
// not the handler's); serve handles the request prepare built last. It reports the
// handler's and the floor's time per operation, the floor's share of the handler's
// time (crypto-%) and tokens a second.
func BenchHandlerAndFloor(b *testing.B, prepare func(i int), serve, floor func()) {
	inHandler, inFloor := Interleave(b, prepare, serve, floor)
	b.ReportMetric(float64(inHandler.Nanoseconds())/float64(b.N), "handler-ns/op")
	b.ReportMetric(float64(inFloor.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(100*float64(inFloor)/float64(inHandler), "crypto-%")
	b.ReportMetric(float64(b.N)/inHandler.Seconds(), "tokens/s")
}

// Interleave runs first and then second, b.N times, so that both see the same machine,
// and returns the time each took in all; the benchmark's timer covers the rounds only.
// prepare(i), when not nil, runs before the i-th round, outside both times.
func Interleave(b *testing.B, prepare func(i int), first, second func()) (inFirst, inSecond time.Duration) {
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prepare != nil {
			prepare(i)
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		inFirst += t1.Sub(t0)
		inSecond += time.Since(t1)
	}
	b.StopTimer()
	return inFirst, inSecond
}

// NewKey generates a private key for alg; a failure fails the test.
func NewKey(t testing.TB, alg string) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(alg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
