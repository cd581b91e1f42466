package testkit

import (
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
	iss := wit.NewIssuer("https://"+td+"/wit-issuer", func() *keys.PrivateKey { return k }, wit.IssuerClock(clock.Now))
	return &Domain{Name: td, Key: k, Issuer: iss, Trust: trust, Clock: clock}
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
