package adaptertest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
)

// TwoDomainsSteps are the lines both adapters' examples/twodomains print, in order,
// for the link across the boundary, the hotel's checks of the WIT, the signature, the
// access token and the grant, and the planner's check of the signed status.
var TwoDomainsSteps = []string{
	"[1] trust domains a.example and b.example",
	"ok  TTS A issued the Txn-Token for D1",
	"ok  AS A issued a grant for AS B with D1's Txn-Token; AS B redeemed it for an access token of b.example",
	"ok  the hotel established D2 with the planner as initiator",
	"ok  hotel: the WIT of wimse://a.example/agent/planner verified with a.example's issuer keys",
	"ok  hotel: the access token is AS B's, for b.example, issued to the planner and bound to its WIT key",
	"ok  hotel: the offer (signed by the planner, for D2) names as grant the SHA-256 of that access token",
	"ok  hotel: TTS B exchanged the access token for a Txn-Token of b.example recording D2",
	`ok  planner: verified the hotel's signed "completed" status: the hop is resolved`,
}

// RunsInOrder runs an example's run and checks that it succeeds and prints wants, in
// that order.
func RunsInOrder(t *testing.T, run func(context.Context, io.Writer) error, wants ...string) {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	at := 0
	for _, want := range wants {
		i := strings.Index(text[at:], want)
		if i < 0 {
			t.Fatalf("missing, or out of order: %q\n%s", want, text)
		}
		at += i + len(want)
	}
}

// RefusesAnotherGrant runs an example with *bindGrant making the offer's grant name
// another credential than the access token that travels with it: the hotel's receiver
// must refuse it with its signed "rejected" status (reason policy) before any work, so
// the example fails with handoff_policy and prints none of the hotel's checks.
func RefusesAnotherGrant(t *testing.T, run func(context.Context, io.Writer) error, bindGrant *func([]byte) handoff.Digest) {
	t.Helper()
	saved := *bindGrant
	*bindGrant = func([]byte) handoff.Digest { return handoff.BindGrant([]byte("another credential")) }
	defer func() { *bindGrant = saved }()
	var out bytes.Buffer
	err := run(context.Background(), &out)
	if got := errcode.CodeOf(err); got != errcode.HandoffPolicy {
		t.Fatalf("run: %v (code %q), want handoff_policy\n%s", err, got, out.String())
	}
	if !strings.Contains(err.Error(), `"rejected"`) || strings.Contains(out.String(), "ok  hotel:") || strings.Contains(out.String(), "done:") {
		t.Fatalf("the refusal was not the hotel's rejection before the work: %v\n%s", err, out.String())
	}
}
