package wit

import (
	"context"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Credential is a WIT together with the private key its cnf.jwk names. The key belongs
// to this WIT alone (workload-creds-02 section 9.4, WIT-3): it is generated for it and
// must not be used after Expiry. A Credential handed out by a Source is shared between
// callers and must not be modified.
type Credential struct {
	WIT    string
	Key    *keys.PrivateKey
	Expiry time.Time
}

// Source gives a workload its current credential, like oauth2.TokenSource does for
// access tokens. Implementations are safe for concurrent use and never return an
// expired credential.
type Source interface {
	Credential(ctx context.Context) (*Credential, error)
}

var _ Source = (*Credential)(nil)

// Credential makes a credential its own Source, as go-spiffe's x509svid.SVID is an
// x509svid.Source: a workload that holds one credential for as long as it runs (a WIT
// and key read from files, a test's workload) hands the credential itself wherever a
// Source is asked for. It gives c every time: it has no clock, so it neither refreshes
// nor refuses c once expired (the peer's validator does). Where the holder must stop
// sending c at its Expiry, use c.Expiring.
func (c *Credential) Credential(context.Context) (*Credential, error) { return c, nil }

// Expiring returns c as a Source that gives c until its Expiry by now and refuses it
// with expired from then on: the credential a linked dialog's access token is bound to
// (cnf.jkt) is never replaced, and never sent expired.
func (c *Credential) Expiring(now func() time.Time) Source { return expiring{c, now} }

type expiring struct {
	c   *Credential
	now func() time.Time
}

func (e expiring) Credential(context.Context) (*Credential, error) {
	if !e.now().Before(e.c.Expiry) {
		return nil, errcode.New(errcode.Expired, "the credential has expired")
	}
	return e.c, nil
}

// FetchFunc obtains a WIT for the public half of key (for example from a WIT issuer)
// and returns it with its expiry.
type FetchFunc func(ctx context.Context, key *keys.PrivateKey) (token string, expiry time.Time, err error)

// Defaults of NewRefreshingSource.
const (
	DefaultRefreshFraction = 0.8
	DefaultRefreshMargin   = 30 * time.Second
	DefaultRetryInterval   = 5 * time.Second
	DefaultFetchTimeout    = 30 * time.Second
)

// RefreshingSource is the Source that keeps one credential and replaces it before it
// expires. Every fetch uses a key generated for it (WIT-3). Concurrent callers that find
// the credential due share one fetch. A failed refresh keeps the current credential in
// service while it is still valid; an expired one is never returned.
type RefreshingSource struct {
	fetch        FetchFunc
	alg          string
	now          func() time.Time
	fraction     float64
	margin       time.Duration
	retry        time.Duration
	fetchTimeout time.Duration

	mu        sync.Mutex
	cur       *Credential
	refreshAt time.Time
	retryAt   time.Time // no new fetch before this while cur is valid (after a failure)
	flight    *flight
}

type flight struct {
	done chan struct{}
	cred *Credential
	err  error
}

var _ Source = (*RefreshingSource)(nil)

// NewRefreshingSource returns a Source that obtains credentials with fetch.
func NewRefreshingSource(fetch FetchFunc, opts ...SourceOption) *RefreshingSource {
	s := &RefreshingSource{
		fetch: fetch, alg: keys.ES256, now: time.Now,
		fraction: DefaultRefreshFraction, margin: DefaultRefreshMargin,
		retry: DefaultRetryInterval, fetchTimeout: DefaultFetchTimeout,
	}
	for _, o := range opts {
		o.applySource(s)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.fraction <= 0 || s.fraction > 1 {
		s.fraction = DefaultRefreshFraction
	}
	if s.margin < 0 {
		s.margin = 0
	}
	return s
}

// Credential implements Source.
func (s *RefreshingSource) Credential(ctx context.Context) (*Credential, error) {
	s.mu.Lock()
	now := s.now()
	if s.cur != nil && now.Before(s.refreshAt) {
		c := s.cur
		s.mu.Unlock()
		return c, nil
	}
	if s.valid(s.cur, now) && now.Before(s.retryAt) {
		// The last refresh failed recently; the current credential still serves.
		c := s.cur
		s.mu.Unlock()
		return c, nil
	}
	f := s.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		s.flight = f
		// Detached from the caller: other callers may wait for this fetch after the
		// first one has given up.
		go s.run(context.WithoutCancel(ctx), f)
	}
	s.mu.Unlock()

	var err error
	select {
	case <-f.done:
		err = f.err
	case <-ctx.Done():
		err = errcode.Unavailable(errcode.IssuerUnavailable, ctx.Err(), "gave up waiting for a WIT")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Checked again at return: time may have passed while waiting, and an expired
	// credential is never handed out.
	now = s.now()
	if err == nil && s.valid(f.cred, now) {
		return f.cred, nil
	}
	if s.valid(s.cur, now) {
		return s.cur, nil
	}
	if err == nil {
		err = errcode.New(errcode.Expired, "the WIT expired before it could be handed out")
	}
	return nil, err
}

func (s *RefreshingSource) valid(c *Credential, now time.Time) bool {
	return c != nil && now.Before(c.Expiry)
}

func (s *RefreshingSource) run(ctx context.Context, f *flight) {
	if s.fetchTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.fetchTimeout)
		defer cancel()
	}
	start := s.now()
	cred, err := s.obtain(ctx)

	s.mu.Lock()
	now := s.now()
	switch {
	case err != nil:
		s.retryAt = now.Add(s.retry)
	case !now.Before(cred.Expiry):
		err = errcode.New(errcode.Expired, "the fetched WIT expired at %d, now %d", cred.Expiry.Unix(), now.Unix())
		s.retryAt = now.Add(s.retry)
	default:
		s.cur, s.refreshAt, s.retryAt = cred, s.refreshPoint(start, cred.Expiry), time.Time{}
	}
	f.cred, f.err = cred, err
	if err != nil {
		f.cred = nil
	}
	s.flight = nil
	s.mu.Unlock()
	close(f.done)
}

func (s *RefreshingSource) obtain(ctx context.Context) (*Credential, error) {
	key, err := keys.Generate(s.alg)
	if err != nil {
		return nil, err
	}
	tok, exp, err := s.fetch(ctx, key)
	if err != nil {
		return nil, err
	}
	if tok == "" || exp.IsZero() {
		return nil, errcode.New(errcode.InvalidRequest, "fetch returned no WIT or no expiry")
	}
	return &Credential{WIT: tok, Key: key, Expiry: exp}, nil
}

// refreshPoint is the earlier of fraction of the lifetime and margin before expiry, but
// never before the fetch started (a WIT shorter than the margin is refreshed on next use).
func (s *RefreshingSource) refreshPoint(obtained, expiry time.Time) time.Time {
	life := expiry.Sub(obtained)
	at := obtained.Add(time.Duration(float64(life) * s.fraction))
	if m := expiry.Add(-s.margin); m.Before(at) {
		at = m
	}
	if at.Before(obtained) {
		at = obtained
	}
	return at
}
