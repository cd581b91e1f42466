package proxy

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// maxBoundaryTxnTokens bounds the Txn-Tokens a boundary-facing ingress keeps.
const maxBoundaryTxnTokens = 4096

// boundaryTxnKey names one kept Txn-Token: the access token (by its SHA-256, the
// token itself is never kept as a key), the linked dialog and the scope asked for.
// The TTS request of step 4 is made of exactly these, with this ingress's own WIT.
type boundaryTxnKey struct {
	accessToken [sha256.Size]byte
	dlg         string
	scope       string
}

// boundaryTxn is one kept Txn-Token. sem is held while it is obtained, so that
// concurrent first requests of one key make one TTS exchange.
type boundaryTxn struct {
	sem chan struct{}

	// Set under sem; read under sem.
	claims  *txntoken.Claims // validated when obtained; nil until then
	refresh time.Time        // when it is obtained again

	lastUse time.Time // under boundaryTxnCache.mu
}

// boundaryTxnCache keeps the Txn-Tokens of step 4 (section 11, Figure 5) until
// shortly before the Txn-Token or the access token expires, the least recently used
// going first beyond maxBoundaryTxnTokens. A refused exchange leaves nothing.
type boundaryTxnCache struct {
	mu      sync.Mutex
	entries map[boundaryTxnKey]*boundaryTxn
}

// txnToken returns the validated claims of the Txn-Token for c: kept ones while now
// is before their refresh time, else obtained with exchange (which validates them).
func (k *boundaryTxnCache) txnToken(ctx context.Context, c *agent.CheckedLink, now func() time.Time,
	exchange func(context.Context) (*txntoken.Claims, error)) (*txntoken.Claims, error) {
	key := boundaryTxnKey{accessToken: sha256.Sum256([]byte(c.AccessToken)), dlg: c.Dialog, scope: c.Scope}
	e := k.entry(key, now())
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, ctx.Err(), "the Txn-Token of the linked dialog is being obtained by another request")
	}
	defer func() { <-e.sem }()
	if e.claims != nil && now().Before(e.refresh) {
		return e.claims, nil
	}
	claims, err := exchange(ctx)
	if err != nil {
		e.claims = nil
		k.drop(key, e)
		return nil, err
	}
	t := now()
	end := t // a token without exp or an access token without exp is not kept
	if claims.Exp != nil {
		end = claims.Exp.Time()
	}
	atEnd := t
	if c.Claims != nil && c.Claims.Exp != nil {
		atEnd = c.Claims.Exp.Time()
	}
	e.claims, e.refresh = claims, renewAt(t, end, atEnd)
	return claims, nil
}

// entry is the kept Txn-Token of key, made (empty) if there is none.
func (k *boundaryTxnCache) entry(key boundaryTxnKey, now time.Time) *boundaryTxn {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.entries == nil {
		k.entries = map[boundaryTxnKey]*boundaryTxn{}
	}
	if e, ok := k.entries[key]; ok {
		e.lastUse = now
		return e
	}
	if len(k.entries) >= maxBoundaryTxnTokens {
		var oldest boundaryTxnKey
		var at time.Time
		first := true
		for kk, e := range k.entries {
			if first || e.lastUse.Before(at) {
				oldest, at, first = kk, e.lastUse, false
			}
		}
		delete(k.entries, oldest)
	}
	e := &boundaryTxn{sem: make(chan struct{}, 1), lastUse: now}
	k.entries[key] = e
	return e
}

// drop forgets e after a refused exchange, unless another entry took its key.
func (k *boundaryTxnCache) drop(key boundaryTxnKey, e *boundaryTxn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.entries[key] == e {
		delete(k.entries, key)
	}
}

// len is the number of kept entries, for the tests.
func (k *boundaryTxnCache) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.entries)
}
