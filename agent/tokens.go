package agent

import (
	"context"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// TxnTokenSource gives the Txn-Token to send in dialog dlg.
type TxnTokenSource interface {
	TxnToken(ctx context.Context, dlg string) (string, error)
}

// Forwarded is the Txn-Token an agent received with a verified request: within its
// trust domain it travels on to the next hop unchanged (oauth.md 1.10).
type Forwarded string

// TxnToken returns the token itself.
func (f Forwarded) TxnToken(context.Context, string) (string, error) {
	if f == "" {
		return "", errcode.New(errcode.MissingCredential, "no Txn-Token to forward")
	}
	return string(f), nil
}

// SubjectFunc gives the subject token a TTS request presents, and its type URI.
type SubjectFunc func(ctx context.Context) (token, tokenType string, err error)

// TTSSource asks a Transaction Token Service for a Txn-Token that records the dialog
// (dialog-binding section 10) and keeps each until shortly before it expires.
type TTSSource struct {
	client   *txntoken.Client
	audience string
	scope    string
	subject  SubjectFunc
	margin   time.Duration
	now      func() time.Time

	mu    sync.Mutex
	cache map[string]cachedToken
}

type cachedToken struct {
	token   string
	refresh time.Time
}

// NewTTSSource returns a source for trust domain audience and scope.
func NewTTSSource(c *txntoken.Client, audience, scope string, subject SubjectFunc, now func() time.Time) *TTSSource {
	if now == nil {
		now = time.Now
	}
	return &TTSSource{client: c, audience: audience, scope: scope, subject: subject, margin: 30 * time.Second, now: now, cache: map[string]cachedToken{}}
}

// maxCachedDialogs bounds the per-dialog cache.
const maxCachedDialogs = 4096

// TxnToken returns a cached token for dlg or asks the TTS for one.
func (s *TTSSource) TxnToken(ctx context.Context, dlg string) (string, error) {
	now := s.now()
	s.mu.Lock()
	if c, ok := s.cache[dlg]; ok && now.Before(c.refresh) {
		s.mu.Unlock()
		return c.token, nil
	}
	s.mu.Unlock()
	tok, typ, err := s.subject(ctx)
	if err != nil {
		return "", err
	}
	res, err := s.client.Request(ctx, txntoken.Request{Audience: s.audience, Scope: s.scope, SubjectToken: tok, SubjectTokenType: typ, Dialog: dlg})
	if err != nil {
		return "", err
	}
	life := time.Duration(res.ExpiresIn) * time.Second
	refresh := now.Add(life - s.margin)
	if life <= 2*s.margin {
		refresh = now.Add(life / 2)
	}
	s.mu.Lock()
	if len(s.cache) >= maxCachedDialogs {
		for k, c := range s.cache {
			if !now.Before(c.refresh) {
				delete(s.cache, k)
			}
		}
		if len(s.cache) >= maxCachedDialogs {
			s.cache = map[string]cachedToken{}
		}
	}
	s.cache[dlg] = cachedToken{token: res.AccessToken, refresh: refresh}
	s.mu.Unlock()
	return res.AccessToken, nil
}
