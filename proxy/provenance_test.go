package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dunglas/httpsfv"
)

// figure2 is Figure 2 of dialog-binding: A1's egress starts D1 with agent A2 behind
// ingress2; A2's application calls the tool through egress2, in D1; the tool is behind
// ingress3. Every proxy is real, with the real WIT issuer and TTS of startDomain.
type figure2 struct {
	a1, a2, tool identifier.ID
	egress1      *httptest.Server // A1's egress: /a2 (HTTP signature), /a2wpt (WPT)
	egress2      *httptest.Server // A2's egress: /tool, /peer (crosses a trust boundary)
	app2, tool3  *app             // A2's application, the tool's application
	toTool       *toolHop         // between egress2 and ingress3
	peer         *sink            // the boundary route's upstream and token endpoints
}

// toolHop is a hop that may tamper with the signed request and keeps it and the
// answer to it.
type toolHop struct {
	mu       sync.Mutex
	tamper   func(*http.Request)
	sent     int
	last     *http.Request
	answer   int
	answerTo []byte
}

func (h *toolHop) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	tamper := h.tamper
	h.mu.Unlock()
	if tamper != nil {
		tamper(r)
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	h.mu.Lock()
	h.sent++
	h.last, h.answer, h.answerTo = r.Clone(context.Background()), res.StatusCode, body
	h.mu.Unlock()
	return res, nil
}

func (h *toolHop) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent
}

// sink counts what reaches it and refuses it.
type sink struct {
	mu   sync.Mutex
	hits int
	url  string
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// ingressFor is an ingress in front of upstream for the workload src, verifying
// provenance (section 12 step 2); stateful with a registry when stateful.
func ingressFor(t *testing.T, d *domain, src wit.Source, recipient, upstream string, stateful, forward bool) *httptest.Server {
	wits := wit.NewValidator(d.trust, wit.WithCache(1024, time.Minute))
	opts := append(d.receiverOptions(wits, recipient, store.NewMemory(), src, stateful),
		dialog.WithProvenance(dialog.NewProvenanceVerifier(wits, 0)))
	rc, err := dialog.NewReceiver(opts...)
	mustOK(t, err)
	in, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: upstream, ForwardProvenance: forward})
	mustOK(t, err)
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	return srv
}

func egressFor(t *testing.T, d *domain, id identifier.ID, src wit.Source, base http.RoundTripper, routes ...proxy.Route) *httptest.Server {
	eg, err := proxy.NewEgress(proxy.EgressConfig{
		Self: id, WIT: src,
		TTS:       &txntoken.Client{TokenEndpoint: d.ttsURL + tts.PathToken, WITSource: src, Proof: proof.WPT},
		Subject:   selfSigned(d, id, src),
		Responses: httpsig.NewVerifier(wit.NewValidator(d.trust)),
		Base:      base,
		Routes:    routes,
	})
	mustOK(t, err)
	srv := httptest.NewServer(eg)
	t.Cleanup(srv.Close)
	return srv
}

func newFigure2(t *testing.T) *figure2 {
	d := startDomain(t)
	f := &figure2{app2: startApp(t, nil), tool3: startApp(t, nil), toTool: &toolHop{}, peer: &sink{}}
	var a1src, a2src, toolSrc wit.Source
	f.a1, a1src = d.workload(t, "/agent/a1")
	f.a2, a2src = d.workload(t, "/agent/a2")
	f.tool, toolSrc = d.workload(t, "/tool/t1")
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.peer.mu.Lock()
		f.peer.hits++
		f.peer.mu.Unlock()
		http.Error(w, "the peer domain was reached", http.StatusTeapot)
	}))
	t.Cleanup(peer.Close)
	f.peer.url = peer.URL

	const a2Recipient, toolRecipient = "https://a2.a.example/", "https://t1.a.example/"
	ingress2 := ingressFor(t, d, a2src, a2Recipient, f.app2.url, true, true)
	ingress2off := ingressFor(t, d, a2src, a2Recipient, f.app2.url, true, false)
	ingress3 := ingressFor(t, d, toolSrc, toolRecipient, f.tool3.url, false, true)
	f.egress1 = egressFor(t, d, f.a1, a1src, nil,
		proxy.Route{Prefix: "/a2", Upstream: ingress2.URL + "/task", TxnAudience: td, TxnScope: "trip.book", Recipient: a2Recipient, RequireSignedResponse: true},
		proxy.Route{Prefix: "/a2off", Upstream: ingress2off.URL + "/task", TxnAudience: td, TxnScope: "trip.book", Recipient: a2Recipient, RequireSignedResponse: true},
		proxy.Route{Prefix: "/a2wpt", Upstream: ingress2.URL + "/task", TxnAudience: td, TxnScope: "trip.book", Recipient: a2Recipient, Proof: proof.WPT})
	f.egress2 = egressFor(t, d, f.a2, a2src, f.toTool,
		proxy.Route{Prefix: "/tool", Upstream: ingress3.URL + "/invoke", TxnAudience: td, TxnScope: "trip.book", Recipient: toolRecipient, RequireSignedResponse: true},
		proxy.Route{Prefix: "/peer", Upstream: peer.URL + "/hotel", TxnAudience: td, TxnScope: "trip.book", RequireSignedResponse: true,
			Boundary: &proxy.BoundaryRoute{GrantEndpoint: peer.URL + "/grant", PeerIssuer: peer.URL, PeerTokenEndpoint: peer.URL + "/token", PeerTrustDomain: "b.example"}})
	return f
}

// startD1 has A1 start a dialog with A2 (section 5) through path on its egress and
// returns the dialog and what A2's application got to forward (VerifiedProvenanceField).
func (f *figure2) startD1(t *testing.T, path string) (*dialog.Context, string) {
	t.Helper()
	res, body := post(t, f.egress1.URL+path, `{"task":"book"}`, start())
	if res.StatusCode != 200 {
		t.Fatalf("A1 starting D1: %d %s", res.StatusCode, body)
	}
	dc, err := dialog.FromHeader(res.Header)
	mustOK(t, err)
	r := f.app2.last()
	if r.Header.Get(proxy.VerifiedInitiatorProvedField) != "true" || r.Header.Get(proxy.VerifiedDialogField) != dc.DLG() {
		t.Fatalf("A2's application: %v", r.Header)
	}
	return dc, r.Header.Get(proxy.VerifiedProvenanceField)
}

// callTool is A2's application calling the tool through egress2 in dc, with h.
func (f *figure2) callTool(t *testing.T, dc *dialog.Context, h http.Header) (*http.Response, []byte) {
	t.Helper()
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	if dc != nil {
		h.Set(dialog.HeaderName, dc.Value())
	}
	return post(t, f.egress2.URL+"/tool", `{"tool":"search"}`, h)
}

// Figure 2 with section 9: A2's application forwards the provenance its ingress gave
// it; the tool's receiver verifies A1's record and A2's signature over it, so the tool
// knows that A1 initiated D1 although A2 sent the request.
func TestDialogBindingSec9_ProxyForwardsProvenanceToTool(t *testing.T) {
	f := newFigure2(t)
	dc, forward := f.startD1(t, "/a2")
	if forward == "" {
		t.Fatal("A2's application got nothing to forward")
	}
	if r := f.app2.last(); r.Header.Get(dialog.ProvenanceHeader) != "" {
		t.Fatalf("A2's application sees a %s field", dialog.ProvenanceHeader)
	}
	res, body := f.callTool(t, dc, http.Header{proxy.ProvenanceField: {forward}})
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	r := f.tool3.last()
	want := map[string]string{
		proxy.VerifiedSenderField: f.a2.String(), proxy.VerifiedDialogField: dc.DLG(),
		proxy.VerifiedInitiatorField: f.a1.String(), proxy.VerifiedInitiatorProvedField: "true",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("the tool's %s: %q, want %q", k, got, v)
		}
	}
	for _, fld := range []string{dialog.ProvenanceHeader, proxy.ProvenanceField} {
		if r.Header.Get(fld) != "" {
			t.Errorf("the tool's application sees %s", fld)
		}
	}
	// What egress2 sent: the forwarded value as Dialog-Provenance, under its signature.
	f.toTool.mu.Lock()
	sent := f.toTool.last
	f.toTool.mu.Unlock()
	if sent.Header.Get(dialog.ProvenanceHeader) != forward || !strings.Contains(sent.Header.Get("Signature-Input"), `"dialog-provenance"`) {
		t.Fatalf("egress2 sent %s %q under %q", dialog.ProvenanceHeader, sent.Header.Get(dialog.ProvenanceHeader), sent.Header.Get("Signature-Input"))
	}
	for name := range sent.Header {
		if strings.HasPrefix(name, proxy.FieldPrefix) {
			t.Errorf("egress2 sent %s", name)
		}
	}
	// The tool could forward in turn: its chain holds A1's record, then A2's.
	next, err := dialog.ParseProvenance(r.Header.Get(proxy.VerifiedProvenanceField))
	mustOK(t, err)
	if next.Len() != 2 {
		t.Fatalf("the tool's provenance to forward holds %d records, want 2", next.Len())
	}
}

// Section 9: without the forwarded provenance the tool verifies only the hop that sent
// the request, A2, and the initiator A1 is not proved.
func TestDialogBindingSec9_ProxyWithoutProvenanceInitiatorNotProved(t *testing.T) {
	f := newFigure2(t)
	dc, _ := f.startD1(t, "/a2")
	res, body := f.callTool(t, dc, nil)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	r := f.tool3.last()
	if r.Header.Get(proxy.VerifiedSenderField) != f.a2.String() || r.Header.Get(proxy.VerifiedInitiatorField) != f.a1.String() ||
		r.Header.Get(proxy.VerifiedInitiatorProvedField) != "false" {
		t.Fatalf("the tool's fields: %v", r.Header)
	}
	f.toTool.mu.Lock()
	sent := f.toTool.last.Header.Get(dialog.ProvenanceHeader)
	f.toTool.mu.Unlock()
	if sent != "" {
		t.Fatal("egress2 sent provenance it was not given")
	}
}

// Section 9: every record covers the Dialog-Context it was made in, so provenance of
// another dialog cannot prove this one's initiator; egress2 refuses it, and a value
// that is malformed, too large, repeated or without a dialog, before sending anything.
func TestDialogBindingSec9_ProxyEgressRefusesProvenance(t *testing.T) {
	f := newFigure2(t)
	dc, forward := f.startD1(t, "/a2")
	_, otherForward := f.startD1(t, "/a2") // D1', also from A1
	for name, c := range map[string]struct {
		dc   *dialog.Context
		h    http.Header
		code errcode.Code
	}{
		"another dialog's provenance": {dc, http.Header{proxy.ProvenanceField: {otherForward}}, errcode.ProvenanceDialogMismatch},
		"without a Dialog-Context":    {nil, http.Header{proxy.ProvenanceField: {forward}}, errcode.InvalidProvenance},
		"with Start-Dialog":           {nil, http.Header{proxy.ProvenanceField: {forward}, proxy.StartDialogField: {"?1"}}, errcode.InvalidProvenance},
		"twice":                       {dc, http.Header{proxy.ProvenanceField: {forward, forward}}, errcode.DuplicateField},
		"malformed":                   {dc, http.Header{proxy.ProvenanceField: {"not a list of records"}}, errcode.InvalidProvenance},
		"over the size bound":         {dc, http.Header{proxy.ProvenanceField: {":" + strings.Repeat("A", dialog.MaxProvenanceSize) + ":"}}, errcode.InvalidProvenance},
	} {
		t.Run(name, func(t *testing.T) {
			sent, hits := f.toTool.count(), f.tool3.hits()
			res, body := f.callTool(t, c.dc, c.h)
			if got := codeOf(res.StatusCode, body); got != c.code || res.StatusCode < 400 {
				t.Errorf("%d %s: got %s, want %s", res.StatusCode, body, got, c.code)
			}
			if f.toTool.count() != sent || f.tool3.hits() != hits {
				t.Error("a refused request was sent on")
			}
		})
	}
	// A route crossing a trust boundary: D1's provenance stays in this domain.
	res, body := post(t, f.egress2.URL+"/peer", `{}`, http.Header{dialog.HeaderName: {dc.Value()}, proxy.ProvenanceField: {forward}})
	if got := codeOf(res.StatusCode, body); got != errcode.CrossesTrustBoundary {
		t.Errorf("boundary route: %d %s", res.StatusCode, body)
	}
	if f.peer.count() != 0 {
		t.Error("the boundary route contacted the peer domain")
	}
}

// Section 9: a record changed between A2's application and its egress (here A1's
// signature) still names D1, so egress2 sends it, under its own signature; the tool's
// receiver verifies the record and refuses the request, and the tool does not run.
func TestDialogBindingSec9_ProxyTamperedProvenanceRefusedByTool(t *testing.T) {
	f := newFigure2(t)
	dc, forward := f.startD1(t, "/a2")
	l, err := httpsfv.UnmarshalList([]string{forward})
	mustOK(t, err)
	it := l[0].(httpsfv.Item)
	var rec dialog.HopRecord
	mustOK(t, json.Unmarshal(it.Value.([]byte), &rec))
	rec.Sig[len(rec.Sig)/2] ^= 1
	b, err := json.Marshal(rec)
	mustOK(t, err)
	l[0] = httpsfv.NewItem(b)
	tampered, err := httpsfv.Marshal(l)
	mustOK(t, err)

	hits := f.tool3.hits()
	res, body := f.callTool(t, dc, http.Header{proxy.ProvenanceField: {tampered}})
	if res.StatusCode < 400 {
		t.Fatalf("the tampered provenance was accepted: %d %s", res.StatusCode, body)
	}
	f.toTool.mu.Lock()
	code := errcode.CodeOf(problem.Read(f.toTool.answer, f.toTool.answerTo))
	sent := f.toTool.last.Header.Get(dialog.ProvenanceHeader)
	f.toTool.mu.Unlock()
	if sent != tampered {
		t.Fatalf("egress2 sent %q", sent)
	}
	if code != errcode.InvalidSignature {
		t.Errorf("the tool's receiver answered %s, want %s", code, errcode.InvalidSignature)
	}
	if f.tool3.hits() != hits {
		t.Error("the tool ran")
	}
}

// Section 9: a hop proved with a WPT leaves no signature base to record, so the
// ingress gives its application nothing to forward (the request itself verifies).
func TestDialogBindingSec9_ProxyWPTHopNotForwardable(t *testing.T) {
	wantNoProvenance(t, "/a2wpt", "wpt", "a WPT hop was given provenance to forward")
}

// The provenance to forward carries the earlier hops' signature bases, the sender's WIT
// and Txn-Token among them: an ingress hands it to its application only when configured
// to (IngressConfig.ForwardProvenance), and otherwise keeps every credential from it.
func TestDialogBindingSec9_ProxyProvenanceOnlyWhenConfigured(t *testing.T) {
	wantNoProvenance(t, "/a2off", "httpsig", "an ingress without ForwardProvenance handed on provenance")
}

// wantNoProvenance starts D1 through A2's route and checks that A2's application got
// a request verified with proofMethod and no provenance to forward; what says what a
// forwardable value would mean.
func wantNoProvenance(t *testing.T, route, proofMethod, what string) {
	t.Helper()
	f := newFigure2(t)
	_, v := f.startD1(t, route)
	if r := f.app2.last(); r.Header.Get(proxy.VerifiedProofField) != proofMethod {
		t.Fatalf("A2's application: %v", r.Header)
	}
	if v != "" {
		t.Fatalf("%s: %q", what, v)
	}
}
