package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/openfga"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// openfgaModel is the authorization model of the tests, in OpenFGA's JSON form (the
// relation "tools/call" has a slash, which its DSL does not take): a workload may be
// allowed to have Txn-Tokens issued for a trust domain (txn_token#issue, the TTS's
// question), and to call a tool (tool#tools/call, the ingress's question) only in a
// dialog a user started and proved (the condition user_dialog over the AuthZEN
// context's initiator and initiator_proved).
const openfgaModel = `{"schema_version":"1.1","type_definitions":[
 {"type":"workload"},
 {"type":"txn_token","relations":{"issue":{"this":{}}},"metadata":{"relations":{"issue":{"directly_related_user_types":[{"type":"workload"}]}}}},
 {"type":"tool","relations":{"tools/call":{"this":{}}},"metadata":{"relations":{"tools/call":{"directly_related_user_types":[{"type":"workload","condition":"user_dialog"}]}}}}],
 "conditions":{"user_dialog":{"name":"user_dialog",
  "expression":"initiator.startsWith(\"wimse://a.example/user/\") && initiator_proved",
  "parameters":{"initiator":{"type_name":"TYPE_NAME_STRING"},"initiator_proved":{"type_name":"TYPE_NAME_BOOL"}}}}}`

func startOpenFGAStore(t *testing.T) (*openfga.Server, *openfga.Store) {
	t.Helper()
	fga := openfga.Start(t, proc.Binary(t, openfga.EnvBinary))
	st, err := fga.NewStore(context.Background(), "dialogtrust-interop", json.RawMessage(openfgaModel))
	if err != nil {
		t.Fatal(err)
	}
	return fga, st
}

// TestOpenFGA_AuthZENDecider asks OpenFGA v1.22.1, a PDP no one here wrote, through its
// AuthZEN 1.0 endpoints, as a receiver or the ingress does (authzen.Decider, the
// mapping authzen.RequestFor): discovery from its metadata, allow, deny (another tool;
// a dialog no user started; an initiator not proved), the decision cache (a tuple
// deleted at the PDP is still allowed from the cache until its TTL passes on the
// injected clock), and fail-closed when the PDP is down (decision_unavailable, 503).
func TestOpenFGA_AuthZENDecider(t *testing.T) {
	ctx := context.Background()
	fga, st := startOpenFGAStore(t)
	travel := openfga.Tuple{User: "workload:" + authzen.EscapeID("wimse://a.example/agent/travel"), Relation: "tools/call", Object: "tool:book",
		Condition: &openfga.Condition{Name: "user_dialog"}}
	if err := st.Write(ctx, travel); err != nil {
		t.Fatal(err)
	}
	clk := testkit.NewClock(time.Date(2026, 1, 11, 12, 0, 0, 0, time.UTC))
	cl, err := authzen.New(st.PDP(), authzen.WithMetadataURL(st.MetadataURL()), authzen.WithEscapedIDs(),
		authzen.WithClock(clk.Now), authzen.WithCache(100, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	d := authzen.Decider{Client: cl}
	call := func(tool, initiator string, proved bool) *authz.Request {
		return &authz.Request{Sender: "wimse://a.example/agent/travel", SenderTrustDomain: "a.example", Proof: "httpsig",
			Initiator: initiator, InitiatorProved: proved, Dialog: "d-1", Txn: map[string]any{"sub": "alice", "scope": "trip.book"},
			Method: "POST", Path: "/mcp", Protocol: "mcp", Operation: "tools/call", Name: tool}
	}
	alice := "wimse://a.example/user/alice"
	if dec, err := authz.Check(ctx, d, call("book", alice, true)); err != nil || !dec.Allow || dec.Rule != "authzen "+st.PDP() {
		t.Fatalf("allowed call refused: %+v %v", dec, err)
	}
	for name, r := range map[string]*authz.Request{
		"another tool":          call("cancel", alice, true),
		"not a user's dialog":   call("book", "wimse://a.example/agent/x", true),
		"initiator not proved":  call("book", alice, false),
		"another sender":        {Sender: "wimse://a.example/agent/other", Initiator: alice, InitiatorProved: true, Method: "POST", Path: "/mcp", Protocol: "mcp", Operation: "tools/call", Name: "book"},
		"not the tool relation": {Sender: "wimse://a.example/agent/travel", Initiator: alice, InitiatorProved: true, Method: "POST", Path: "/mcp", Protocol: "mcp", Operation: "tools/list"},
	} {
		_, err := authz.Check(ctx, d, r)
		switch {
		case name == "not the tool relation":
			// OpenFGA answers 400 for a relation its model lacks on the type: no decision.
			if errcode.CodeOf(err) != errcode.DecisionUnavailable && errcode.CodeOf(err) != errcode.NotAuthorized {
				t.Errorf("%s: %v", name, err)
			}
		case errcode.CodeOf(err) != errcode.NotAuthorized:
			t.Errorf("%s: %v, want not_authorized", name, err)
		}
	}

	// The decision cache: the PDP no longer allows, the cached decision stands until its
	// TTL has passed.
	if err := st.Delete(ctx, travel); err != nil {
		t.Fatal(err)
	}
	if _, err := authz.Check(ctx, d, call("book", alice, true)); err != nil {
		t.Fatalf("cached allow not served: %v", err)
	}
	clk.Advance(time.Minute)
	if _, err := authz.Check(ctx, d, call("book", alice, true)); errcode.CodeOf(err) != errcode.NotAuthorized {
		t.Fatalf("after the TTL: %v, want not_authorized", err)
	}

	// Down: fail closed.
	fga.Process.Stop()
	clk.Advance(time.Minute)
	_, err = authz.Check(ctx, d, call("book", alice, true))
	if errcode.CodeOf(err) != errcode.DecisionUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("PDP down: %v, want decision_unavailable", err)
	}
}

// TestOpenFGA_TTS runs cmd/tts with an authzen section naming an OpenFGA store: a
// workload the PDP allows gets a Txn-Token, one it does not gets unauthorized_client
// (not_authorized) and no token, and once the PDP is down a request it was never asked
// about gets temporarily_unavailable (decision_unavailable, 503) and no token.
func TestOpenFGA_TTS(t *testing.T) {
	ctx := context.Background()
	fga, st := startOpenFGAStore(t)
	for _, w := range []string{"wimse://a.example/agent/a1", "wimse://a.example/agent/a2"} {
		if err := st.Write(ctx, openfga.Tuple{User: "workload:" + authzen.EscapeID(w), Relation: "issue", Object: "txn_token:a.example"}); err != nil {
			t.Fatal(err)
		}
	}
	bin := proc.BuildBinaries(t, "github.com/dialogtrust/dialogtrust/cmd/tts", "github.com/dialogtrust/dialogtrust/cmd/wit-issuer")
	dir := t.TempDir()
	witURL := startDevWITIssuer(t, bin, dir, "a.example")
	ttsCfg := proc.WriteFile(t, dir, "tts.yaml", devTTSConfig("a.example", witURL)+fmt.Sprintf(`subject_tokens:
  self_signed: {enabled: true}
policy:
  lifetime: 5m
  rules:
    - workload: "wimse://a.example/"
      subject_token_types: [self_signed]
      details: ["*"]
authzen:
  url: %[1]q
  metadata_url: %[2]q
  escape_ids: true
  timeout: 5s
  cache_ttl: 1m
log: {level: info}
`, st.PDP(), st.MetadataURL()))
	md := startTTS(t, bin, dir, "tts", ttsCfg)
	doms := &hydraDomains{witURL: witURL}
	request := func(id string) (*oauth.TokenResponse, error) {
		w := doms.workload(t, id)
		self, err := txntoken.NewSelfSignedToken(w.key, w.id, "alice@a.example", md.Issuer, "trip.read", 5*time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c := &txntoken.Client{TokenEndpoint: md.TokenEndpoint, WIT: w.wit, Key: w.key}
		return c.Request(ctx, txntoken.Request{Audience: "a.example", Scope: "trip.read", SubjectToken: self,
			SubjectTokenType: oauth.TokenTypeSelfSigned, Dialog: "d-1"})
	}
	if resp, err := request("wimse://a.example/agent/a1"); err != nil || resp.AccessToken == "" {
		t.Fatalf("allowed workload: %v", err)
	}
	if resp, err := request("wimse://a.example/agent/b"); errcode.CodeOf(err) != errcode.NotAuthorized || resp != nil {
		t.Fatalf("denied workload: %v %v, want not_authorized and no token", resp, err)
	}
	fga.Process.Stop()
	resp, err := request("wimse://a.example/agent/a2")
	if errcode.CodeOf(err) != errcode.DecisionUnavailable || errcode.KindOf(err) != errcode.Incomplete || resp != nil {
		t.Fatalf("PDP down: %v %v, want decision_unavailable and no token", resp, err)
	}
}
