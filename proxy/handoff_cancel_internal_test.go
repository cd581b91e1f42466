package proxy

import (
	"fmt"
	"testing"
	"time"
)

// The record of sent offers keeps the newest MaxRememberedOffers, each for
// RememberedOfferTTL: a new offer pushes out the oldest, and an expired one is gone.
func TestSentOffersBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	rh := &routeHandoff{now: func() time.Time { return now }, sent: &sentOffers{hops: map[string]*sentOffer{}}}
	body := []byte(`{"jsonrpc":"2.0","id": 7,"method":"tools/call","params":{}}`)
	for i := range MaxRememberedOffers + 1 {
		(&egressOffer{rh: rh, hop: fmt.Sprintf("hop%d", i), dlg: "D1"}).remember(body)
	}
	if n := len(rh.sent.hops); n != MaxRememberedOffers || len(rh.sent.order) != n {
		t.Fatalf("%d offers remembered (%d in order), want %d", n, len(rh.sent.order), MaxRememberedOffers)
	}
	if rh.sent.lookup("hop0", now) != nil {
		t.Fatal("the oldest offer was kept past the bound")
	}
	so := rh.sent.lookup("hop1", now)
	if so == nil || so.dlg != "D1" || string(so.id) != "7" {
		t.Fatalf("hop1: %+v", so)
	}
	now = now.Add(RememberedOfferTTL - time.Second)
	if rh.sent.lookup("hop1", now) == nil {
		t.Fatal("an offer forgotten before its time")
	}
	now = now.Add(time.Second)
	if rh.sent.lookup("hop1", now) != nil {
		t.Fatal("an offer kept past RememberedOfferTTL")
	}
	(&egressOffer{rh: rh, hop: "late", dlg: "D1"}).remember(body)
	if len(rh.sent.hops) != 1 || rh.sent.lookup("late", now) == nil {
		t.Fatalf("the expired offers were not dropped: %d left", len(rh.sent.hops))
	}
}
