package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// The kept Txn-Tokens are bounded: beyond maxBoundaryTxnTokens the least recently used
// goes, and a recently used one stays. A Txn-Token without exp is not kept.
func TestBoundaryTxnCacheBounded(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	clock := start
	now := func() time.Time { return clock }
	exp := jose.NumericDate(start.Add(5 * time.Minute).Unix())
	atExp := jose.NumericDate(start.Add(time.Hour).Unix())
	var exchanges int
	exchange := func(context.Context) (*txntoken.Claims, error) {
		exchanges++
		return &txntoken.Claims{Exp: &exp}, nil
	}
	link := func(i int) *agent.CheckedLink {
		return &agent.CheckedLink{AccessToken: fmt.Sprint("at-", i), Claims: &chaining.AccessTokenClaims{Exp: &atExp}, Dialog: "D2", Scope: "s"}
	}
	var k boundaryTxnCache
	ctx := context.Background()
	for i := range maxBoundaryTxnTokens {
		clock = start.Add(time.Duration(i) * time.Millisecond)
		if _, err := k.txnToken(ctx, link(i), now, exchange); err != nil {
			t.Fatal(err)
		}
	}
	// Key 0 is used again, so key 1 is now the least recently used.
	clock = clock.Add(time.Millisecond)
	if _, err := k.txnToken(ctx, link(0), now, exchange); err != nil || exchanges != maxBoundaryTxnTokens {
		t.Fatalf("key 0 again: %v, %d exchanges", err, exchanges)
	}
	clock = clock.Add(time.Millisecond)
	if _, err := k.txnToken(ctx, link(maxBoundaryTxnTokens), now, exchange); err != nil || k.len() != maxBoundaryTxnTokens {
		t.Fatalf("one more key: %v, %d kept", err, k.len())
	}
	before := exchanges
	for _, c := range []struct {
		key  int
		kept bool
	}{{0, true}, {2, true}, {1, false}} {
		_, _ = k.txnToken(ctx, link(c.key), now, exchange)
		if kept := exchanges == before; kept != c.kept {
			t.Errorf("key %d kept %v, want %v", c.key, kept, c.kept)
		}
		before = exchanges
	}

	var bare boundaryTxnCache
	noExp := func(context.Context) (*txntoken.Claims, error) { exchanges++; return &txntoken.Claims{}, nil }
	before = exchanges
	for range 2 {
		_, _ = bare.txnToken(ctx, link(0), now, noExp)
	}
	if exchanges-before != 2 {
		t.Fatalf("a Txn-Token without exp was kept: %d exchanges for 2 requests", exchanges-before)
	}
}
