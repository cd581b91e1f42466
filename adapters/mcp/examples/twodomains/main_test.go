package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The example runs to its end over loopback and prints every step it verified, in
// order: the link across the boundary, the hotel's checks of the WIT, the signature,
// the access token and the grant, and the planner's check of the signed status.
func TestTwoDomainsExampleRuns(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	at := 0
	for _, want := range []string{
		"[1] trust domains a.example and b.example",
		"ok  TTS A issued the Txn-Token for D1",
		"ok  AS A issued a grant for AS B with D1's Txn-Token; AS B redeemed it for an access token of b.example",
		"ok  the hotel established D2 with the planner as initiator",
		"ok  hotel: the WIT of wimse://a.example/agent/planner verified with a.example's issuer keys",
		"ok  hotel: the access token is AS B's, for b.example, issued to the planner and bound to its WIT key",
		"ok  hotel: the offer (signed by the planner, for D2) names as grant the SHA-256 of that access token",
		"ok  hotel: TTS B exchanged the access token for a Txn-Token of b.example recording D2",
		`ok  planner: verified the hotel's signed "completed" status: the hop is resolved`,
		"the tool's answer: booked in Lisbon",
		"done: every step passed",
	} {
		i := strings.Index(text[at:], want)
		if i < 0 {
			t.Fatalf("missing, or out of order: %q\n%s", want, text)
		}
		at += i + len(want)
	}
}
