package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// The A2A JavaScript SDK (@a2a-js/sdk 1.3.0, pinned in js/package-lock.json), which
// implements A2A 1.0, run by node: the other side of A2A 1.0 handoff carriage
// (handoff-context section 6). A test finds node on PATH and the SDK in
// js/node_modules (`npm ci` in interop/js); without either it skips, except under
// CI=true, where it fails.

// jsDir is the directory of the node scripts and their node_modules.
const jsDir = "js"

// nodeBinary returns node, with the SDK installed next to the scripts.
func nodeBinary(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.PeerMissing(t, "node is not on PATH: %v", err)
	}
	if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		testkit.PeerMissing(t, "@a2a-js/sdk is not installed (run `npm ci` in interop/js): %v", err)
	}
	return node
}

// a2aParties is a.example's delegating agent (planner) and delegate (hotel): their
// WITs from one testkit issuer, their handoff keys, and the planner's delegator.
type a2aParties struct {
	dom            *testkit.Domain
	planner, hotel *testkit.Workload
	plannerKey     *keys.PrivateKey
	hotelKey       *keys.PrivateKey
	trust          *handoff.StaticTrust
	delegator      *handoff.Delegator
}

func newA2AParties(t *testing.T) *a2aParties {
	t.Helper()
	p := &a2aParties{dom: testkit.NewDomain(t, "a.example", keys.ES256, testkit.NewClock(time.Now()))}
	p.planner = p.dom.Workload(t, "/agent/planner", keys.ES256)
	p.hotel = p.dom.Workload(t, "/agent/hotel", keys.ES256)
	var err error
	if p.plannerKey, err = keys.Generate(keys.ES256); err != nil {
		t.Fatal(err)
	}
	if p.hotelKey, err = keys.Generate(keys.ES256); err != nil {
		t.Fatal(err)
	}
	p.trust = handoff.NewStaticTrust()
	if err := p.trust.Bind(p.planner.ID.String(), p.plannerKey.Public()); err != nil {
		t.Fatal(err)
	}
	if err := p.trust.Bind(p.hotel.ID.String(), p.hotelKey.Public()); err != nil {
		t.Fatal(err)
	}
	if p.delegator, err = handoff.NewDelegator(handoff.DelegatorConfig{Self: p.planner.ID.String(), Key: p.plannerKey, Trust: p.trust}); err != nil {
		t.Fatal(err)
	}
	return p
}

// offer signs an offer from the planner to the hotel in dialog dlg.
func (p *a2aParties) offer(t *testing.T, dlg string) *handoff.Handoff {
	t.Helper()
	h, err := p.delegator.Offer(context.Background(), handoff.OfferRequest{Offer: handoff.Offer{Aud: p.hotel.ID.String(), Dialog: dlg}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Section 6 (A2A 1.0), Go to JS: our A2A 1.0 request (agent.NewA2ARequest with
// hostproto.A2A10: method SendMessage, a 1.0 Message, the extension listed in
// A2A-Extensions) is accepted by the SDK's JSON-RPC server, whose executor finds the
// handoff under the extension URI in the message's metadata with the offer's octets
// unchanged; the reply is a 1.0 SendMessage result ({"message": ...}).
func TestA2AJS_ServerReadsOurA2A10Offer(t *testing.T) {
	node := nodeBinary(t)
	port := testkit.FreePort(t)
	srv := proc.StartProcess(t, "a2a-js server", node, jsDir, []string{"server.mjs", strconv.Itoa(port)}, nil)
	endpoint := srv.WaitLine(t, "listening ", 30*time.Second)

	p := newA2AParties(t)
	const dlg = "a2a-js.go-to-js.dialog"
	h := p.offer(t, dlg)
	msg := json.RawMessage(`{"role":"ROLE_USER","parts":[{"text":"book a hotel in Lisbon"}],"messageId":"go-m1","contextId":"` + dlg + `"}`)
	req, err := agent.NewA2ARequest(context.Background(), hostproto.A2A10, endpoint, 7, msg, h)
	if err != nil {
		t.Fatal(err)
	}
	// The planner's WIMSE proof rides along (the SDK ignores it), as it would to any
	// A2A 1.0 delegate.
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &agent.Transport{
		Source: &wit.Credential{WIT: p.planner.WIT, Key: p.planner.Key, Expiry: time.Now().Add(time.Hour)},
		Proof:  proof.WPT,
	}}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", res.StatusCode, body)
	}
	var rpc struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   json.RawMessage `json:"error"`
		Result  struct {
			Message *struct {
				Role     string `json:"role"`
				Metadata struct {
					Seen struct {
						Handoff            json.RawMessage `json:"handoff"`
						RequestedExtension []string        `json:"requestedExtensions"`
						RequestedVersion   string          `json:"requestedVersion"`
						MessageID          string          `json:"messageId"`
						Text               []string        `json:"text"`
					} `json:"dialogtrust.interop/seen"`
				} `json:"metadata"`
			} `json:"message"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &rpc); err != nil {
		t.Fatalf("reply %s: %v", body, err)
	}
	if rpc.Error != nil || rpc.JSONRPC != "2.0" || string(rpc.ID) != "7" || rpc.Result.Message == nil {
		t.Fatalf("not an A2A 1.0 SendMessage result: %s", body)
	}
	if rpc.Result.Message.Role != "ROLE_AGENT" {
		t.Errorf("reply role %q, want ROLE_AGENT (1.0)", rpc.Result.Message.Role)
	}
	seen := rpc.Result.Message.Metadata.Seen
	if seen.RequestedVersion != "1.0" || seen.MessageID != "go-m1" || len(seen.Text) != 1 || seen.Text[0] != "book a hotel in Lisbon" {
		t.Errorf("the executor saw version %q, message %q, parts %q", seen.RequestedVersion, seen.MessageID, seen.Text)
	}
	if len(seen.RequestedExtension) != 1 || seen.RequestedExtension[0] != handoff.A2AExtensionURI {
		t.Errorf("requested extensions %q, want the agent-handoff URI", seen.RequestedExtension)
	}
	if got := res.Header.Values(hostproto.A2AExtensionsHeader); len(got) != 1 || got[0] != handoff.A2AExtensionURI {
		t.Errorf("the server activated %q, want the agent-handoff URI", got)
	}
	var carried struct {
		Offer string `json:"offer"`
	}
	if err := json.Unmarshal(seen.Handoff, &carried); err != nil || carried.Offer != h.Offer.Text() {
		t.Fatalf("the executor saw the handoff %s, want offer %q", seen.Handoff, h.Offer.Text())
	}
	back, err := handoff.HandoffFromMeta(seen.Handoff)
	if err != nil || !bytes.Equal(back.Offer.Octets, h.Offer.Octets) {
		t.Fatalf("the offer's octets changed on the way (%v)", err)
	}
}

// Section 6 (A2A 1.0), JS to Go: the SDK's client sends a Go-signed offer in a
// SendMessage to a dialog.Receiver with WithHandoffsIn(..., hostproto.A2A10) in front of a
// Go A2A 1.0 handler, which answers with the hotel's signed status in the reply
// Message's metadata; the SDK parses the reply without error and prints the status,
// which the planner's delegator verifies against its offer. A handoff in
// params.metadata, where A2A 1.0 carries none, is refused handoff_unplaced.
//
// The SDK's client cannot make WIMSE proofs, so the request is proved on its way: a
// reverse proxy in this test, standing for the planner's egress, signs it as the
// planner (agent.Transport, WPT) before it reaches the receiver.
func TestA2AJS_ClientReadsOurA2A10Reply(t *testing.T) {
	node := nodeBinary(t)
	p := newA2AParties(t)
	records := store.NewMemoryRecords()
	// The keys are this test's own: no offer predates the records (section 8.4).
	hr := handoff.NewReceiver(p.hotel.ID.String(), p.trust, records, handoff.WithStatusKey(p.hotelKey), handoff.WithRecordsLostAt(time.Time{}))

	backend := httptest.NewUnstartedServer(nil)
	backendURL := "http://" + backend.Listener.Addr().String() + "/a2a"
	rc, err := dialog.NewReceiver(
		dialog.WithWPT(wpt.NewVerifier(p.dom.Validator(), wpt.WithAudiences(backendURL), wpt.WithReplay(store.NewMemory()))),
		dialog.WithHandoffsIn(hr, hostproto.A2A10),
	)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var handled []http.Header
	backend.Config.Handler = rc.Middleware(hotelA2A10(t, hr, func(h http.Header) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, h.Clone())
	}))
	backend.Start()
	t.Cleanup(backend.Close)

	target, _ := url.Parse(backendURL)
	egress := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.URL.Path, r.Out.Host = target.Scheme, target.Host, target.Path, ""
		},
		Transport: &agent.Transport{
			Source: &wit.Credential{WIT: p.planner.WIT, Key: p.planner.Key, Expiry: time.Now().Add(time.Hour)},
			Proof:  proof.WPT,
		},
	})
	t.Cleanup(egress.Close)

	run := func(place, dlg string, h *handoff.Handoff) (string, string) {
		t.Helper()
		hj, err := h.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "client.mjs", egress.URL+"/a2a", place)
		cmd.Dir = jsDir
		cmd.Env = append(proc.BaseEnv(), "DIALOGTRUST_HANDOFF="+string(hj), "DIALOGTRUST_DIALOG="+dlg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		line := strings.TrimSpace(string(out))
		kind, rest, _ := strings.Cut(line, " ")
		if (kind == "status") != (err == nil) || (kind != "status" && kind != "error") {
			t.Fatalf("node client.mjs %s: %v\nstdout: %s\nstderr: %s", place, err, out, stderr.String())
		}
		return kind, rest
	}

	t.Run("placed", func(t *testing.T) {
		const dlg = "a2a-js.js-to-go.dialog"
		h := p.offer(t, dlg)
		kind, text := run("message", dlg, h)
		if kind != "status" {
			t.Fatalf("the SDK client refused our reply: %s", text)
		}
		st, err := handoff.ParseSignedText(text)
		if err != nil {
			t.Fatal(err)
		}
		u, err := p.delegator.HandleStatus(context.Background(), st)
		if err != nil {
			t.Fatalf("the status the SDK client parsed does not verify against the offer: %v", err)
		}
		if u.Status.State != handoff.StateCompleted || !u.Hop.Resolved {
			t.Fatalf("status %s, hop %+v", u.Status.State, u.Hop)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(handled) != 1 {
			t.Fatalf("the handler ran %d times", len(handled))
		}
		if got := handled[0].Get("A2A-Version"); got != "1.0" {
			t.Errorf("the SDK client sent A2A-Version %q", got)
		}
		if got := handled[0].Get(hostproto.A2AExtensionsHeader); got != handoff.A2AExtensionURI {
			t.Errorf("the SDK client sent A2A-Extensions %q", got)
		}
	})

	t.Run("unplaced", func(t *testing.T) {
		mu.Lock()
		before := len(handled)
		mu.Unlock()
		const dlg = "a2a-js.js-to-go.unplaced"
		kind, text := run("params", dlg, p.offer(t, dlg))
		if kind != "error" {
			t.Fatalf("a handoff in params.metadata was answered: %s", text)
		}
		// The receiver refuses before the handler runs, with a JSON-RPC error naming the
		// request's id on 200 (-32602, the stable code and kind in its data), which the
		// SDK client raises as the call's JSON-RPC error with the message and data.
		var e struct {
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
				Kind string `json:"kind"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			t.Fatalf("client error %s: %v", text, err)
		}
		t.Logf("the SDK client surfaced: %s", text)
		if e.Data.Code != string(errcode.HandoffUnplaced) || e.Data.Kind != errcode.Failed.String() || !strings.HasPrefix(e.Message, string(errcode.HandoffUnplaced)+": ") {
			t.Fatalf("the SDK client's error does not carry %s: %s", errcode.HandoffUnplaced, text)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(handled) != before {
			t.Fatal("the handler ran for an unplaced handoff")
		}
	})
}

// hotelA2A10 is the hotel's A2A 1.0 JSON-RPC handler behind the dialog receiver: for a
// SendMessage whose offer the receiver accepted, it does the work, and answers with a
// 1.0 SendMessage result, a Message carrying the signed "completed" status in its
// metadata under the extension URI (section 6).
func hotelA2A10(t *testing.T, hr *handoff.Receiver, record func(http.Header)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r.Header)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
					ContextID string `json:"contextId"`
				} `json:"message"`
			} `json:"params"`
		}
		v := dialog.FromRequest(r)
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Method != "SendMessage" || v == nil || v.Handoff == nil || v.Handoff.Offer == nil {
			t.Errorf("hotel: method %q, verified %+v (%v)", req.Method, v, err)
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		o := v.Handoff.Offer
		if _, err := hr.Accept(r.Context(), o.Iss, o.Hop); err != nil {
			t.Errorf("hotel: accept: %v", err)
		}
		st, err := hr.Complete(r.Context(), o.Iss, o.Hop, nil)
		if err != nil {
			t.Errorf("hotel: complete: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		msg, _ := json.Marshal(map[string]any{"role": "ROLE_AGENT", "messageId": "hotel-" + req.Params.Message.MessageID,
			"contextId": req.Params.Message.ContextID, "parts": []any{map[string]any{"text": "booked"}}})
		msg, err = handoff.PutA2AStatus(msg, st)
		if err != nil {
			t.Errorf("hotel: status: %v", err)
		}
		result, _ := json.Marshal(map[string]json.RawMessage{"message": msg})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": req.ID, "result": result})
	})
}
