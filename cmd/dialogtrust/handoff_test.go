package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/handoff"
)

const (
	hoAssistant = "spiffe://u.example/agent/assistant"
	hoPlanner   = "spiffe://a.example/agent/planner"
	hoCoder     = "spiffe://b.example/agent/coder"
)

type handoffEnv struct {
	dir, trust string
	keys       map[string]string
}

func setupHandoff(t *testing.T) handoffEnv {
	t.Helper()
	e := handoffEnv{dir: t.TempDir(), keys: map[string]string{}}
	doc := map[string]any{}
	for i, id := range []string{hoAssistant, hoPlanner, hoCoder} {
		f := filepath.Join(e.dir, []string{"assistant", "planner", "coder"}[i]+".jwk")
		mustRun(t, "", "key generate", "--alg", "ES256", "--out", f)
		pub := mustRun(t, "", "key public", "--in", f)
		doc[id] = map[string]any{"keys": []json.RawMessage{json.RawMessage(strings.TrimSpace(pub))}}
		e.keys[id] = f
	}
	b, _ := json.Marshal(doc)
	e.trust = filepath.Join(e.dir, "trust.json")
	if err := os.WriteFile(e.trust, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e handoffEnv) write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHandoffOfferVerifyStatusDigest(t *testing.T) {
	for _, form := range []string{"jws", "cose"} {
		t.Run(form, func(t *testing.T) {
			e := setupHandoff(t)
			const now = "1793000000"
			first := mustRun(t, `{"dialog":"ctx-7c1e","iss":"`+hoAssistant+`","aud":"`+hoPlanner+`","obo":{"sub":"u-8f2a"}}`,
				"handoff offer", "--key", e.keys[hoAssistant], "--form", form, "--now", now, "-")
			firstFile := e.write(t, "first.json", first)
			second := mustRun(t, `{"dialog":"ctx-7c1e","iss":"`+hoPlanner+`","aud":"`+hoCoder+`","task":"task-42"}`,
				"handoff offer", "--key", e.keys[hoPlanner], "--form", form, "--now", "1793000002", "--prev-handoff", firstFile, "-")
			h, err := handoff.ParseHandoffJSON([]byte(second), 0)
			if err != nil || len(h.Chain) != 1 {
				t.Fatalf("second handoff: %v", err)
			}
			secondFile := e.write(t, "second.json", second)

			out := mustRun(t, "", "handoff verify", "--trust", e.trust, "--self", hoCoder, "--dialog", "ctx-7c1e",
				"--now", "1793000005", "--trusted-origin", hoAssistant, "@"+secondFile)
			var rep map[string]any
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep["decision"] != "accepted" || rep["iss"] != hoPlanner {
				t.Fatalf("verify: %s", out)
			}
			if c := rep["chain"].(map[string]any); c["full"] != true || c["origin"] != hoAssistant {
				t.Fatalf("chain: %v", c)
			}
			// The obo of the first offer is carried on.
			o, _ := handoff.DecodeOffer(h.Offer)
			if o.Obo == nil || o.Obo.Sub != "u-8f2a" || o.Prev == nil {
				t.Fatalf("offer %+v", o)
			}

			// A chain element replaced by another offer: broken-chain, exit 1.
			other := mustRun(t, `{"dialog":"ctx-7c1e","iss":"`+hoAssistant+`","aud":"`+hoPlanner+`"}`,
				"handoff offer", "--key", e.keys[hoAssistant], "--form", form, "--now", now, "-")
			oh, _ := handoff.ParseHandoffJSON([]byte(other), 0)
			h.Chain[0] = oh.Offer
			broken, _ := h.MarshalJSON()
			stdout, stderr, code := dt(t, string(broken), "handoff verify", "--trust", e.trust, "--self", hoCoder, "--now", "1793000005", "-")
			if code != 1 || stdout != `{"decision":"rejected","reason":"broken-chain"}`+"\n" || !strings.HasPrefix(stderr, "error: handoff_broken_chain\n") {
				t.Fatalf("broken chain: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			stdout, _, code = dt(t, "", "handoff verify", "--trust", e.trust, "--self", hoAssistant, "--now", "1793000005", "@"+secondFile)
			if code != 1 || stdout != `{"decision":"rejected","reason":"wrong-audience"}`+"\n" {
				t.Fatalf("wrong audience: %d %q", code, stdout)
			}
			stdout, _, code = dt(t, "", "handoff verify", "--trust", e.trust, "--self", hoCoder, "--now", "1793000005", "--dialog", "ctx-other", "@"+secondFile)
			if code != 1 || stdout != `{"decision":"rejected","reason":"policy"}`+"\n" {
				t.Fatalf("dialog: %d %q", code, stdout)
			}
			stdout, _, code = dt(t, "", "handoff verify", "--trust", e.trust, "--self", hoCoder, "--now", "1793009999", "@"+secondFile)
			if code != 1 || stdout != `{"decision":"rejected","reason":"stale"}`+"\n" {
				t.Fatalf("stale: %d %q", code, stdout)
			}
			// Without the chain but a trusted origin required: policy.
			stdout, _, _ = dt(t, "", "handoff verify", "--trust", e.trust, "--self", hoCoder, "--now", "1793000005",
				"--require-full-chain", h.Offer.Text())
			if stdout != `{"decision":"rejected","reason":"policy"}`+"\n" {
				t.Fatalf("absent chain: %q", stdout)
			}

			// The coder's status, checked by the planner.
			st := strings.TrimSpace(mustRun(t, "", "handoff status", "--key", e.keys[hoCoder], "--offer", "@"+secondFile,
				"--state", "accepted", "--now", "1793000003"))
			sj := mustRun(t, "", "handoff status verify", "--trust", e.trust, "--offer", "@"+secondFile, "--self", hoPlanner, st)
			parsed, err := handoff.ParseStatusJSON([]byte(strings.TrimSpace(sj)))
			if err != nil || parsed.State != handoff.StateAccepted || parsed.Iss != hoCoder || parsed.Aud != hoPlanner {
				t.Fatalf("status: %s %v", sj, err)
			}
			// Its offer member is the handoff digest of the planner's offer.
			dg := mustRun(t, "", "handoff digest", "@"+secondFile)
			var d map[string]string
			_ = json.Unmarshal([]byte(dg), &d)
			if d["val"] != parsed.Offer.Val || d["alg"] != "sha-256" {
				t.Fatalf("digest %s, status names %s", dg, parsed.Offer.Val)
			}
			// A status signed by the wrong party's key.
			forged := strings.TrimSpace(mustRun(t, "", "handoff status", "--key", e.keys[hoAssistant], "--offer", "@"+secondFile,
				"--state", "completed"))
			if _, stderr, code := dt(t, "", "handoff status verify", "--trust", e.trust, "--offer", "@"+secondFile, forged); code != 1 ||
				!strings.HasPrefix(stderr, "error: handoff_untrusted_key") {
				t.Fatalf("forged status: %d %q", code, stderr)
			}
			// The planner's cancel comes from the planner.
			cancel := strings.TrimSpace(mustRun(t, "", "handoff status", "--key", e.keys[hoPlanner], "--offer", "@"+secondFile, "--state", "canceled"))
			mustRun(t, "", "handoff status verify", "--trust", e.trust, "--offer", "@"+secondFile, "--self", hoCoder, cancel)
		})
	}
}

// The example of section 2.3, through the command line at a pinned clock.
func TestHandoffVerifyDraftExample(t *testing.T) {
	trust := "../../handoff/testdata/example-2.3-trust.json"
	h := "@../../handoff/testdata/example-2.3-handoff.json"
	out := mustRun(t, "", "handoff verify", "--trust", trust, "--self", hoCoder, "--dialog", "ctx-7c1e", "--now", "1793000003",
		"--trusted-origin", hoAssistant, "--credential", "example access token issued to spiffe://b.example/agent/coder", h)
	if !strings.HasPrefix(out, `{"decision":"accepted"`) {
		t.Fatal(out)
	}
	stdout, _, code := dt(t, "", "handoff verify", "--trust", trust, "--self", hoCoder, "--now", "1793000003", "--credential", "another token", h)
	if code != 1 || stdout != `{"decision":"rejected","reason":"policy"}`+"\n" {
		t.Fatalf("grant: %d %q", code, stdout)
	}
	if d := mustRun(t, "example access token issued to spiffe://b.example/agent/coder", "handoff digest", "--raw", "-"); !strings.Contains(d, "SKLjsfET5xtZoO5hzIiZFigz2JoYZLmW8Cg8GuYh4o4") {
		t.Fatal(d)
	}
	if d := mustRun(t, "", "handoff digest", h); !strings.Contains(d, "kJIcudVNmFFwbYKTXNO3mqC3e9dQSWVXDNbamGeoP18") {
		t.Fatal(d)
	}
}

func TestHandoffUsage(t *testing.T) {
	for _, args := range [][]string{
		{"handoff verify"},
		{"handoff verify", "--trust", "x"},
		{"handoff offer"},
		{"handoff offer", "--key", "k", "--form", "pem", "{}"},
		{"handoff status", "--key", "k"},
		{"handoff digest", "a", "b"},
	} {
		if _, _, code := dt(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	e := setupHandoff(t)
	// An offer without aud is a rejection of the input, not a usage error.
	if _, stderr, code := dt(t, `{"dialog":"d","iss":"`+hoPlanner+`"}`, "handoff offer", "--key", e.keys[hoPlanner], "-"); code != 1 ||
		!strings.HasPrefix(stderr, "error: invalid_request") {
		t.Fatalf("%d %q", code, stderr)
	}
}
