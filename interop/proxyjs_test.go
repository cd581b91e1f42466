package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// Issue 15's acceptance, with software no one here wrote on both ends: agents built on
// the official TypeScript MCP SDK (@modelcontextprotocol/sdk) and on the A2A
// JavaScript SDK (@a2a-js/sdk), both pinned in js/package-lock.json, talk through two
// `dialogtrust proxy` processes: the delegating agent's egress, which starts the
// dialog, makes the signed handoff offer and puts it in the JSON-RPC body, and the
// delegate's ingress, which verifies the request and the offer, tells the application
// what it verified, and signs the status the application reports. Every party is a
// real process: `dialogtrust dev` (the WIT issuer and the TTS of dev.local), the three
// proxies, and the node peers in js/. Without node or the SDKs the test skips, except
// under CI=true, where it fails.

// The workloads of the test, in dev.local; their AgentIds are their workload
// identifiers.
const (
	jsPlannerID = "wimse://dev.local/agent/planner"
	jsHotelID   = "wimse://dev.local/agent/hotel"
	// jsStrangerID is a delegate an egress route names but that does not serve it: its
	// key is trusted, it is just not the hotel.
	jsStrangerID = "wimse://dev.local/agent/stranger"
	// jsHotelAudience is what the hotel's ingress accepts as the requests' wimse-aud.
	jsHotelAudience = "https://hotel.dev.local/"
)

// jsSDKs returns node, with both SDKs installed next to the scripts.
func jsSDKs(t *testing.T) string {
	t.Helper()
	node := nodeBinary(t)
	if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		testkit.PeerMissing(t, "@modelcontextprotocol/sdk is not installed (run `npm ci` in interop/js): %v", err)
	}
	return node
}

// jsDomain is dev.local as `dialogtrust dev` runs it, the dialogtrust binary, and the
// handoff keys of the three agents with the trust document binding them.
type jsDomain struct {
	bin, dir       string
	witURL, ttsURL string
	keyFiles       map[string]string // AgentId -> private JWK file
	trustFile      string
	trust          *handoff.StaticTrust
}

func startJSDomain(t *testing.T) *jsDomain {
	t.Helper()
	d := &jsDomain{
		bin:      filepath.Join(proc.BuildBinaries(t, "github.com/dialogtrust/dialogtrust/cmd/dialogtrust"), "dialogtrust"),
		dir:      t.TempDir(),
		keyFiles: map[string]string{},
		trust:    handoff.NewStaticTrust(),
	}
	doc := map[string]any{}
	for _, id := range []string{jsPlannerID, jsHotelID, jsStrangerID} {
		k, err := keys.Generate(keys.ES256)
		if err != nil {
			t.Fatal(err)
		}
		priv, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		d.keyFiles[id] = proc.WriteFile(t, d.dir, strings.ReplaceAll(strings.TrimPrefix(id, "wimse://dev.local/"), "/", "-")+".jwk", string(priv))
		doc[id] = map[string]any{"keys": []*keys.PublicKey{k.Public()}}
		if err := d.trust.Bind(id, k.Public()); err != nil {
			t.Fatal(err)
		}
	}
	trust, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	d.trustFile = proc.WriteFile(t, d.dir, "trust.json", string(trust))

	// dev keeps the files of its printed commands under the user's cache directory:
	// this test's own.
	home := t.TempDir()
	dev := proc.StartProcess(t, "dialogtrust dev", d.bin, d.dir, []string{"dev"}, []string{"HOME=" + home, "XDG_CACHE_HOME=" + home})
	d.witURL = firstWord(dev.WaitLine(t, "  WIT issuer  ", time.Minute))
	d.ttsURL = firstWord(dev.WaitLine(t, "  TTS         ", time.Minute))
	dev.WaitLine(t, "Ready in ", time.Minute)
	return d
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// common is the part of a proxy configuration every one here shares: workload id's
// WIT from dev.local's issuer, trust in dev.local's WITs, and id's handoff key and
// the trust document.
func (d *jsDomain) common(id string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
trust_domains: [dev.local]
workload: {id: %[1]s, wit_issuer: %[2]s, auth: development}
wits: [{trust_domain: dev.local, jwks_url: %[2]s/.well-known/jwks.json}]
handoff: {key_file: %[3]s, trust_file: %[4]s}
jwks_retry: 1s
`, id, d.witURL, d.keyFiles[id], d.trustFile)
}

// ingressYAML is the hotel's ingress in front of the application at app, checking the
// handoffs of host.
func (d *jsDomain) ingressYAML(app, host string) string {
	return d.common(jsHotelID) + fmt.Sprintf(`ingress:
  listen: 127.0.0.1:0
  upstream: %[1]s
  audiences: [%[2]q]
  txn_tokens: {jwks_url: %[3]s/.well-known/jwks.json}
  require_txn_token: true
  require_dialog: true
  sign_responses: true
  handoff_hosts: [%[4]s]
`, app, jsHotelAudience, d.ttsURL, host)
}

// jsRoute is one egress route that makes handoff offers.
type jsRoute struct{ prefix, upstream, delegate, host string }

func (r jsRoute) routeYAML() string {
	return fmt.Sprintf("{prefix: %s, upstream: %s, audience: dev.local, scope: trip.book, recipient: %q, require_signed_response: true, delegate: %s, host: %s}",
		r.prefix, r.upstream, jsHotelAudience, r.delegate, r.host)
}

// egressRoute is a route of egressYAML: its entry in egress.routes.
type egressRoute interface{ routeYAML() string }

// egressYAML is the planner's egress with routes.
func (d *jsDomain) egressYAML(routes ...egressRoute) string {
	var b strings.Builder
	b.WriteString(d.common(jsPlannerID))
	fmt.Fprintf(&b, `egress:
  listen: 127.0.0.1:0
  tts: {token_endpoint: %[1]s/token, issuer: %[1]s, self_signed_subject: alice@dev.local}
  routes:
`, d.ttsURL)
	for _, r := range routes {
		fmt.Fprintf(&b, "    - %s\n", r.routeYAML())
	}
	return b.String()
}

// startProxy runs `dialogtrust proxy -config` with yaml until the test ends, waits for
// its /readyz, and returns the URLs of its listeners by name (ops, egress, ingress).
func (d *jsDomain) startProxy(t *testing.T, name, yaml string) map[string]string {
	t.Helper()
	file := proc.WriteFile(t, d.dir, strings.ReplaceAll(name, " ", "-")+".yaml", yaml)
	p := proc.StartProcess(t, name, d.bin, d.dir, []string{"proxy", "-config", file}, nil)
	// "proxy listening on OPS (egress URL, ingress URL)"
	rest := p.WaitLine(t, "proxy listening on ", time.Minute)
	ops, list, ok := strings.Cut(rest, " (")
	if !ok {
		t.Fatalf("%s: listening line %q", name, rest)
	}
	urls := map[string]string{"ops": ops}
	for _, part := range strings.Split(strings.TrimSuffix(list, ")"), ", ") {
		n, u, _ := strings.Cut(part, " ")
		urls[n] = u
	}
	p.WaitHTTP(t, ops+"/readyz", time.Minute)
	return urls
}

// runJS runs a node client in js/ and returns its one line, split into its kind
// ("result" or "error") and JSON.
func runJS(t *testing.T, node string, env []string, args ...string) (string, json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = jsDir
	cmd.Env = append(proc.BaseEnv(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	kind, rest, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if (kind == "result") != (err == nil) || (kind != "result" && kind != "error") || !json.Valid([]byte(rest)) {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return kind, json.RawMessage(rest)
}

// runJSHandoff is runJS for a client whose request carries an offer. The ingress
// keeps its handoff records in memory, so an offer issued in the second it started,
// or before, may have been seen by an earlier process and is rejected with reason
// replay (section 8.4): then the client asks again, with a new offer in a new dialog,
// until its offers are issued after that second.
func runJSHandoff(t *testing.T, node string, env []string, args ...string) (string, json.RawMessage) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		kind, out := runJS(t, node, env, args...)
		var r struct {
			Fields map[string]string `json:"fields"`
		}
		_ = json.Unmarshal(out, &r)
		if field(r.Fields, proxy.HandoffStatusField) != string(handoff.StateRejected) ||
			field(r.Fields, proxy.HandoffReasonField) != string(handoff.ReasonReplay) || time.Now().After(deadline) {
			return kind, out
		}
		t.Logf("rejected as a replay by the fresh ingress; asking again")
	}
}

// seenFields is what an application behind the ingress reported it saw.
type seenFields struct {
	Fields          map[string]string `json:"fields"`
	CredentialsSeen []string          `json:"credentialsSeen"`
	Problems        []string          `json:"problems"`
}

// field is the value of an HTTP field in a map keyed by lower-case names, as node
// reports them.
func field(m map[string]string, name string) string { return m[strings.ToLower(name)] }

// checkSeen: the application saw the planner as the verified sender, the dialog the
// client was given, the accepted handoff of hop, from the planner, and none of the
// credentials.
func checkSeen(t *testing.T, s seenFields, dlg, hop string) {
	t.Helper()
	f := s.Fields
	if got := field(f, proxy.VerifiedSenderField); got != jsPlannerID {
		t.Errorf("the application saw sender %q, want %q", got, jsPlannerID)
	}
	if got := field(f, proxy.VerifiedDialogField); got != dlg {
		t.Errorf("the application saw dialog %q, want %q", got, dlg)
	}
	if got := field(f, proxy.VerifiedHandoffField); got != "accepted" {
		t.Errorf("the application saw handoff %q, want accepted", got)
	}
	if got := field(f, proxy.VerifiedHandoffHopField); got != hop {
		t.Errorf("the application saw handoff hop %q, want %q", got, hop)
	}
	if got := field(f, proxy.VerifiedHandoffFromField); got != jsPlannerID {
		t.Errorf("the application saw the handoff from %q, want %q", got, jsPlannerID)
	}
	if len(s.CredentialsSeen) != 0 {
		t.Errorf("the application saw the credentials %q", s.CredentialsSeen)
	}
	if len(s.Problems) != 0 {
		t.Errorf("the application's own checks failed: %q", s.Problems)
	}
}

// checkOffer: what the application found in the body at the host's place is the
// planner's signed offer for hop, to the hotel, in dialog dlg, for task, with a grant.
func (d *jsDomain) checkOffer(t *testing.T, carried any, dlg, hop, task string) {
	t.Helper()
	h, err := handoff.HandoffFromMeta(carried)
	if err != nil || h == nil {
		t.Fatalf("the application found no handoff at the host's place (%v): %v", err, carried)
	}
	o, err := handoff.VerifyOffer(context.Background(), d.trust, h.Offer, 0)
	if err != nil {
		t.Fatalf("the offer the application found does not verify: %v", err)
	}
	if o.Iss != jsPlannerID || o.Aud != jsHotelID || o.Hop != hop || o.Dialog != dlg || o.Grant == nil {
		t.Errorf("offer iss %q aud %q hop %q dialog %q grant %v", o.Iss, o.Aud, o.Hop, o.Dialog, o.Grant)
	}
	if o.Task == nil || *o.Task != task {
		t.Errorf("offer task %v, want %q", o.Task, task)
	}
}

// checkStatus: the signed status in the reply's body is the hotel's, to the planner,
// for hop, in state want.
func (d *jsDomain) checkStatus(t *testing.T, carried any, hop string, want handoff.State) {
	t.Helper()
	s, err := handoff.SignedFromMeta(carried)
	if err != nil || s == nil {
		t.Fatalf("no signed status in the reply's body (%v): %v", err, carried)
	}
	vs, err := handoff.VerifyStatusSignature(context.Background(), d.trust, *s, 0)
	if err != nil {
		t.Fatalf("the status in the reply does not verify: %v", err)
	}
	if vs.Iss != jsHotelID || vs.Aud != jsPlannerID || vs.Hop != hop || vs.State != want {
		t.Errorf("status iss %q aud %q hop %q state %q, want the hotel's %q for hop %q", vs.Iss, vs.Aud, vs.Hop, vs.State, want, hop)
	}
}

// dlgOf is the dialog identifier of a Dialog-Context value.
func dlgOf(t *testing.T, value string) string {
	t.Helper()
	dc, err := dialog.Parse(value)
	if err != nil {
		t.Fatalf("Dialog-Context %q: %v", value, err)
	}
	if got := dc.Initiator().String(); got != jsPlannerID {
		t.Errorf("the dialog's initiator is %q, want the planner", got)
	}
	return dc.DLG()
}

// startJSApp runs script of jsDir, the planner's peer application, on a free loopback
// port, and returns it and the URL it prints that it listens on.
func startJSApp(t *testing.T, node, name, script string) (*proc.Program, string) {
	t.Helper()
	p := proc.StartProcess(t, name, node, jsDir, []string{script, strconv.Itoa(testkit.FreePort(t)), jsPlannerID}, nil)
	return p, p.WaitLine(t, "listening ", 30*time.Second)
}

// seenRequests are the requests the application reported, each line "seen JSON".
func seenRequests(p *proc.Program) []string {
	var seen []string
	for _, l := range strings.Split(p.Output(), "\n") {
		if rest, ok := strings.CutPrefix(l, "seen "); ok {
			seen = append(seen, rest)
		}
	}
	return seen
}

// countSeen is how many requests the application reported.
func countSeen(p *proc.Program) int { return len(seenRequests(p)) }

func TestProxyJSSDKs(t *testing.T) {
	node := jsSDKs(t)
	d := startJSDomain(t)

	mcpApp, mcpURL := startJSApp(t, node, "MCP tool server", "proxy-mcp-server.mjs")
	a2aApp, a2aURL := startJSApp(t, node, "A2A server", "proxy-a2a-server.mjs")

	mcpIn := d.startProxy(t, "hotel MCP ingress", d.ingressYAML(strings.TrimSuffix(mcpURL, "/mcp"), "mcp"))
	a2aIn := d.startProxy(t, "hotel A2A ingress", d.ingressYAML(strings.TrimSuffix(a2aURL, "/a2a"), "a2a10"))
	eg := d.startProxy(t, "planner egress", d.egressYAML(
		jsRoute{"/hotel-mcp", mcpIn["ingress"] + "/mcp", jsHotelID, "mcp"},
		jsRoute{"/hotel-mcp-sse", mcpIn["ingress"] + "/mcp-sse", jsHotelID, "mcp"},
		jsRoute{"/hotel-a2a", a2aIn["ingress"] + "/a2a", jsHotelID, "a2a10"},
		// The route's delegate is not the agent behind its upstream.
		jsRoute{"/stranger-mcp", mcpIn["ingress"] + "/mcp", jsStrangerID, "mcp"},
	))
	const task = "hotel-lisbon-1"

	// The MCP SDK's client calls the SDK's tool server through both proxies; the tool
	// reports completed and the ingress signs it. The server answers in
	// application/json (enableJsonResponse) and, the SDK's default, in an event stream,
	// in whose response event the ingress puts the status and the egress verifies it.
	for _, v := range []struct{ name, route, contentType string }{
		{"mcp", "/hotel-mcp", "application/json"},
		{"mcp event stream", "/hotel-mcp-sse", "text/event-stream"},
	} {
		t.Run(v.name, func(t *testing.T) {
			before := countSeen(mcpApp)
			kind, out := runJSHandoff(t, node, []string{"DIALOGTRUST_HANDOFF_TASK=" + task}, "proxy-mcp-client.mjs", eg["egress"]+v.route, `{"city":"Lisbon"}`)
			var r struct {
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					IsError           bool           `json:"isError"`
					Meta              map[string]any `json:"_meta"`
					StructuredContent struct {
						Seen struct {
							seenFields
							Meta        map[string]any `json:"meta"`
							EventStream bool           `json:"eventStream"`
						} `json:"seen"`
					} `json:"structuredContent"`
				} `json:"result"`
				Fields        map[string]string `json:"fields"`
				DialogContext string            `json:"dialogContext"`
			}
			if err := json.Unmarshal(out, &r); err != nil || kind != "result" {
				t.Fatalf("%s %s (%v)", kind, out, err)
			}
			hop := field(r.Fields, proxy.HandoffHopField)
			if got := field(r.Fields, proxy.HandoffStatusField); got != "completed" || hop == "" {
				t.Fatalf("the client got %s %q and hop %q, want completed: %s", proxy.HandoffStatusField, got, hop, out)
			}
			if got := r.Fields["content-type"]; !strings.HasPrefix(got, v.contentType) || r.Result.StructuredContent.Seen.EventStream != (v.contentType == "text/event-stream") {
				t.Errorf("the reply came as %q (the tool's event stream: %v), want %s", got, r.Result.StructuredContent.Seen.EventStream, v.contentType)
			}
			if got, ok := r.Fields["dialogtrust-interop-forged"]; ok {
				t.Errorf("a Dialogtrust-* field the tool set reached the client: %q", got)
			}
			if r.Result.IsError || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "booked in Lisbon" {
				t.Errorf("tool result %+v", r.Result)
			}
			dlg := dlgOf(t, r.DialogContext)
			checkSeen(t, r.Result.StructuredContent.Seen.seenFields, dlg, hop)
			d.checkOffer(t, r.Result.StructuredContent.Seen.Meta[handoff.MCPMetaKey], dlg, hop, task)
			d.checkStatus(t, r.Result.Meta[handoff.MCPMetaKey], hop, handoff.StateCompleted)
			if n := countSeen(mcpApp) - before; n != 1 {
				t.Errorf("the tool ran %d times, want once", n)
			}
		})
	}

	// An offer to a delegate other than the agent behind the upstream: the hotel's
	// ingress rejects it (wrong-audience, section 5.1 step 2) with a status it signs,
	// which the egress verifies and the SDK's client gets as the tool's result; the
	// tool is not reached.
	t.Run("mcp wrong delegate", func(t *testing.T) {
		before := countSeen(mcpApp)
		kind, out := runJSHandoff(t, node, nil, "proxy-mcp-client.mjs", eg["egress"]+"/stranger-mcp", `{"city":"Lisbon"}`)
		var r struct {
			Result struct {
				Meta map[string]any `json:"_meta"`
			} `json:"result"`
			Fields map[string]string `json:"fields"`
		}
		if err := json.Unmarshal(out, &r); err != nil || kind != "result" {
			t.Fatalf("%s %s (%v)", kind, out, err)
		}
		hop := field(r.Fields, proxy.HandoffHopField)
		if got := field(r.Fields, proxy.HandoffStatusField); got != string(handoff.StateRejected) || hop == "" {
			t.Fatalf("the client got %s %q and hop %q, want rejected: %s", proxy.HandoffStatusField, got, hop, out)
		}
		if got := field(r.Fields, proxy.HandoffReasonField); got != string(handoff.ReasonWrongAudience) {
			t.Errorf("the client got %s %q, want %s", proxy.HandoffReasonField, got, handoff.ReasonWrongAudience)
		}
		d.checkStatus(t, r.Result.Meta[handoff.MCPMetaKey], hop, handoff.StateRejected)
		if n := countSeen(mcpApp) - before; n != 0 {
			t.Errorf("the tool ran %d times for a rejected offer", n)
		}
	})

	// The A2A SDK's client sends a message through both proxies to the SDK's server,
	// whose executor publishes a Task; without a status field from the application the
	// ingress maps the Task's state to the signed status (Table 1).
	a2a := func(t *testing.T, text string, wantTaskState int, want handoff.State, wantReason string, stream bool) {
		before := countSeen(a2aApp)
		env, contentType := []string{"DIALOGTRUST_HANDOFF_TASK=" + task}, "application/json"
		if stream {
			env, contentType = append(env, "DIALOGTRUST_A2A_STREAM=1"), "text/event-stream"
		}
		kind, out := runJSHandoff(t, node, env, "proxy-a2a-client.mjs", eg["egress"]+"/hotel-a2a", text)
		var r struct {
			Result struct {
				Status struct {
					State   int `json:"state"`
					Message struct {
						Metadata map[string]json.RawMessage `json:"metadata"`
					} `json:"message"`
				} `json:"status"`
			} `json:"result"`
			Status any               `json:"status"`
			Fields map[string]string `json:"fields"`
		}
		if err := json.Unmarshal(out, &r); err != nil || kind != "result" {
			t.Fatalf("%s %s (%v)", kind, out, err)
		}
		hop := field(r.Fields, proxy.HandoffHopField)
		if got := field(r.Fields, proxy.HandoffStatusField); got != string(want) || hop == "" {
			t.Fatalf("the client got %s %q and hop %q, want %s: %s", proxy.HandoffStatusField, got, hop, want, out)
		}
		if got := r.Fields["content-type"]; !strings.HasPrefix(got, contentType) {
			t.Errorf("the reply came as %q, want %s", got, contentType)
		}
		if got := field(r.Fields, proxy.HandoffReasonField); got != wantReason {
			t.Errorf("the client got %s %q, want %q", proxy.HandoffReasonField, got, wantReason)
		}
		if r.Result.Status.State != wantTaskState {
			t.Errorf("task state %d (the SDK's TaskState), want %d", r.Result.Status.State, wantTaskState)
		}
		var seen struct {
			seenFields
			Handoff any `json:"handoff"`
		}
		if err := json.Unmarshal(r.Result.Status.Message.Metadata["dialogtrust.interop/seen"], &seen); err != nil {
			t.Fatalf("the task's status message has no report of the executor: %v", err)
		}
		dlg := dlgOf(t, field(r.Fields, dialog.HeaderName))
		checkSeen(t, seen.seenFields, dlg, hop)
		d.checkOffer(t, seen.Handoff, dlg, hop, task)
		d.checkStatus(t, r.Status, hop, want)
		if n := countSeen(a2aApp) - before; n != 1 {
			t.Errorf("the executor ran %d times, want once", n)
		}
	}
	// The SDK's TaskState enum: TASK_STATE_COMPLETED is 3, TASK_STATE_FAILED 4.
	t.Run("a2a", func(t *testing.T) { a2a(t, "book a hotel in Lisbon", 3, handoff.StateCompleted, "", false) })
	// The same as a SendStreamingMessage: the reply is an event stream, in whose
	// terminal Task event the ingress puts the status and the egress verifies it.
	t.Run("a2a stream", func(t *testing.T) { a2a(t, "book a hotel in Lisbon", 3, handoff.StateCompleted, "", true) })
	// The executor cannot do the work and publishes a failed Task: the ingress signs
	// "failed" with the detail of Table 1's mapping, which the egress passes on.
	t.Run("a2a failed task", func(t *testing.T) {
		a2a(t, "book a hotel on the moon", 4, handoff.StateFailed, "the task failed", false)
	})
}
