package tts

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// fakeDecider records what it is asked and answers as told.
type fakeDecider struct {
	asked []authz.Issuance
	dec   authz.Decision
	err   error
}

func (f *fakeDecider) DecideIssuance(_ context.Context, in *authz.Issuance) (authz.Decision, error) {
	f.asked = append(f.asked, *in)
	return f.dec, f.err
}

// Issue 25: an external decision point is asked after the TTS's own policy allowed an
// issuance, with the claims about to be signed; a refusal issues nothing
// (not_authorized, unauthorized_client 400) and a decision point that cannot decide
// issues nothing either (decision_unavailable, temporarily_unavailable 503). The
// decision point's reason is logged, never sent.
func TestIssue25_IssuanceDecider(t *testing.T) {
	d := &fakeDecider{dec: authz.Decision{Allow: true, Rule: "authzen test"}}
	e := newEnv(t, func(c *Config) { c.Decider = d })
	w := e.workload("/agent/a1")
	subject := e.selfSigned(w, "alice", "trip.read")
	f := baseForm(tdA, "trip.read", subject, TokenTypeSelfSigned)
	f.Set("request_details", `{"dlg":"d-1","purpose":"travel"}`)

	status, _, body := e.rawPost(w, f, nil)
	if status != http.StatusOK {
		t.Fatalf("allowed: %d %s", status, body)
	}
	if len(d.asked) != 1 {
		t.Fatalf("asked %d times", len(d.asked))
	}
	in := d.asked[0]
	if in.Requester != "wimse://a.example/agent/a1" || in.RequesterTrustDomain != tdA || in.Proof == "" ||
		in.Audience != tdA || !slices.Equal(in.Scopes, []string{"trip.read"}) || in.Dialog != "d-1" ||
		!strings.Contains(mustJSON(t, in.Details), `"purpose":"travel"`) || in.SubjectTokenType != TokenTypeSelfSigned || !strings.HasSuffix(in.Subject, "alice") || in.Replacement {
		t.Fatalf("asked about %+v", in)
	}

	d.dec = authz.Decision{Rule: "authzen test", Reason: "secret-policy-C076E82F"}
	status, _, body = e.rawPost(w, f, nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrUnauthorizedClient, errcode.NotAuthorized)
	if strings.Contains(string(body), "access_token") || strings.Contains(string(body), "C076E82F") {
		t.Fatalf("a refusal issued or told the reason: %s", body)
	}
	if !strings.Contains(e.logs.String(), "secret-policy-C076E82F") {
		t.Fatalf("the reason is not logged: %s", e.logs)
	}

	d.err = errors.New("pdp down")
	status, h, body := e.rawPost(w, f, nil)
	wantOAuth(t, status, body, http.StatusServiceUnavailable, oauth.ErrTemporarilyUnavailable, errcode.DecisionUnavailable)
	if strings.Contains(string(body), "access_token") || h.Get("Retry-After") == "" {
		t.Fatalf("PDP down: %v %s", h, body)
	}
	if len(d.asked) != 3 {
		t.Fatalf("asked %d times", len(d.asked))
	}
}

// Issue 25: the TTS's own policy decides first; a request it refuses never reaches the
// decision point.
func TestIssue25_PolicyBeforeDecider(t *testing.T) {
	d := &fakeDecider{dec: authz.Decision{Allow: true}}
	e := newEnv(t, func(c *Config) { c.Decider = d })
	w := e.workload("/agent/scoped") // may ask for trip.read only
	f := baseForm(tdA, "trip.book", e.selfSigned(w, "alice", "trip.book"), TokenTypeSelfSigned)
	status, _, body := e.rawPost(w, f, nil)
	if status == http.StatusOK || len(d.asked) != 0 {
		t.Fatalf("%d %s, asked %d", status, body, len(d.asked))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
