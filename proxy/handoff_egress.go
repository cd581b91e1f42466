package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/keys"
)

// routeHandoff is what a route that makes handoff offers needs.
type routeHandoff struct {
	self     string // the workload: the offers' iss
	delegate string // the offers' aud
	host     hostproto.Host
	key      *keys.PrivateKey
	trust    handoff.Trust
	tokens   agent.TxnTokenSource
	now      func() time.Time
	sent     *sentOffers // the offers made, for their cancel
}

// newRouteHandoff checks a route's handoff members; nil when the route makes no offers.
func newRouteHandoff(cfg EgressConfig, rt Route, prefix string, tokens agent.TxnTokenSource) (*routeHandoff, error) {
	if rt.Delegate.IsZero() {
		if rt.Host != 0 {
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a host protocol without a delegate", prefix)
		}
		return nil, nil
	}
	switch {
	case rt.Boundary != nil:
		// Across a boundary the grant would bind the access token, and the offer's
		// dialog would be the linked one: not made here yet.
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a route crossing a trust boundary makes no handoff offers", prefix)
	case rt.Host != hostproto.MCP && rt.Host != hostproto.A2A03 && rt.Host != hostproto.A2A10:
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a delegate needs the host protocol (MCP, A2A 0.3 or A2A 1.0)", prefix)
	case tokens == nil:
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a delegate needs a Txn-Token audience: the offer's grant is the Txn-Token's digest", prefix)
	case cfg.HandoffKey == nil || cfg.HandoffTrust == nil:
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a delegate needs the handoff key and trust", prefix)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &routeHandoff{self: cfg.Self.String(), delegate: rt.Delegate.String(), host: rt.Host, key: cfg.HandoffKey,
		trust: cfg.HandoffTrust, tokens: tokens, now: now, sent: &sentOffers{hops: map[string]*sentOffer{}}}, nil
}

// handoffRequest reads HandoffField and HandoffTaskField: whether an offer is asked
// for, and its task ("" for none).
func handoffRequest(h http.Header) (bool, string, error) {
	want := false
	switch vals := h.Values(HandoffField); {
	case len(vals) > 1:
		return false, "", errcode.New(errcode.DuplicateField, "more than one %s field", HandoffField)
	case len(vals) == 1 && strings.TrimSpace(vals[0]) == "?1":
		want = true
	case len(vals) == 1 && strings.TrimSpace(vals[0]) != "?0":
		return false, "", errcode.New(errcode.InvalidRequest, "%s must be ?1 or ?0", HandoffField)
	}
	vals := h.Values(HandoffTaskField)
	switch {
	case len(vals) == 0:
		return want, "", nil
	case len(vals) > 1:
		return false, "", errcode.New(errcode.DuplicateField, "more than one %s field", HandoffTaskField)
	case !want:
		return false, "", errcode.New(errcode.InvalidRequest, "%s without %s: ?1", HandoffTaskField, HandoffField)
	}
	task := strings.TrimSpace(vals[0])
	if task == "" || len(task) > MaxHandoffTask || strings.ContainsFunc(task, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return false, "", errcode.New(errcode.InvalidRequest, "%s must be 1 to %d octets of printable ASCII", HandoffTaskField, MaxHandoffTask)
	}
	return true, task, nil
}

// egressOffer is an offer the egress made for one request, and what checks its answer.
type egressOffer struct {
	rh        *routeHandoff
	delegator *handoff.Delegator
	offer     *handoff.Handoff
	hop       string
	dlg       string          // the dialog the offer was made in
	body      []byte          // the request body with the offer in it
	ctx       context.Context // sends exactly the Txn-Token the grant binds
}

// makeOffer signs an offer in dialog dc (handoff-context sections 2, 3; grant section
// 5.7 through agent.OfferInDialog) and puts it in body where the host protocol carries
// it (section 6). The delegator is the exchange's own: the egress follows the hop only
// until its reply, so nothing accumulates across requests.
func (rh *routeHandoff) makeOffer(ctx context.Context, dc *dialog.Context, task string, body []byte) (*egressOffer, error) {
	if h, err := dialog.HandoffsIn(hostproto.Hosts()...)(body); err != nil || h != nil {
		return nil, errcode.New(errcode.HandoffUnplaced, "the request already carries a handoff: the egress makes the offer (%s)", HandoffField)
	}
	del, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: rh.self, Key: rh.key, Trust: rh.trust, Now: rh.now})
	if err != nil {
		return nil, err
	}
	req := handoff.OfferRequest{Offer: handoff.Offer{Aud: rh.delegate, Hop: handoff.NewHopID()}}
	if task != "" {
		req.Offer.Task = handoff.String(task)
	}
	// The body is checked before anything is signed or a Txn-Token asked for.
	if _, err := placeOffer(rh.host, body, dc.DLG(), nil); err != nil {
		return nil, err
	}
	h, sendCtx, err := agent.OfferInDialog(ctx, del, rh.tokens, dc, req)
	if err != nil {
		return nil, err
	}
	out, err := placeOffer(rh.host, body, dc.DLG(), h)
	if err != nil {
		return nil, err
	}
	return &egressOffer{rh: rh, delegator: del, offer: h, hop: req.Offer.Hop, dlg: dc.DLG(), body: out, ctx: sendCtx}, nil
}

// placeOffer puts h (nil: only check) in the JSON-RPC request body of host: the _meta
// of an MCP tools/call's params; the metadata of the message of an A2A 0.3
// message/send or an A2A 1.0 SendMessage, with the extension listed in
// Message.extensions (handoff.PutA2AMessage), or of their streaming forms
// (message/stream, SendStreamingMessage), whose event stream the egress reads whole.
func placeOffer(host hostproto.Host, body []byte, dlg string, h *handoff.Handoff) ([]byte, error) {
	var env map[string]json.RawMessage
	if err := netjson.DecodeObject(body, &env); err != nil || env == nil {
		return nil, errcode.New(errcode.InvalidRequest, "a handoff offer rides in a JSON-RPC request: the body is not a JSON object")
	}
	var method string
	if json.Unmarshal(env["method"], &method) != nil || string(env["jsonrpc"]) != `"2.0"` {
		return nil, errcode.New(errcode.InvalidRequest, "a handoff offer rides in a JSON-RPC 2.0 request: no method")
	}
	if id, ok := env["id"]; !ok || string(id) == "null" {
		return nil, errcode.New(errcode.InvalidRequest, "a handoff offer rides in a JSON-RPC request with an id (its reply carries the status)")
	}
	want := host.OfferMethods()
	if !slices.Contains(want, method) {
		return nil, errcode.New(errcode.InvalidRequest, "the route's %s requests carry a handoff offer in %s, not in %q", host, strings.Join(want, " or "), errcode.Cut(method))
	}
	params := env["params"]
	var p map[string]json.RawMessage
	if err := netjson.DecodeObject(params, &p); err != nil || p == nil {
		return nil, errcode.New(errcode.InvalidRequest, "the %s request's params are not an object", method)
	}
	var err error
	if host == hostproto.MCP {
		if h == nil {
			return body, nil
		}
		if params, err = handoff.PutMCPRequest(params, h); err != nil {
			return nil, err
		}
	} else {
		msg := p["message"]
		var m map[string]json.RawMessage
		if err := netjson.DecodeObject(msg, &m); err != nil || m == nil {
			return nil, errcode.New(errcode.InvalidRequest, "the %s request carries no message object", method)
		}
		if raw, ok := m["contextId"]; ok {
			var cid string
			if json.Unmarshal(raw, &cid) != nil || cid != dlg {
				// The receiver checks the offer's dialog against both (section 5.1, step 5).
				return nil, errcode.New(errcode.InvalidRequest, "the message's contextId must be the dialog's identifier %q, or absent", dlg)
			}
		}
		if h == nil {
			return body, nil
		}
		if msg, err = handoff.PutA2AMessage(msg, h); err != nil {
			return nil, err
		}
		p["message"] = msg
		if params, err = json.Marshal(p); err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "params")
		}
	}
	return hostproto.SetMember(env, "params", params, "request body")
}

// answer verifies the delegate's status in the reply to the offer and sets the
// HandoffStatusField, HandoffReasonField and HandoffHopField of the response for the
// agent. A JSON-RPC result on 2xx must carry a status that verifies (section 5.6, as
// handoff.Delegator.HandleStatus checks it): else the reply is refused and the agent
// gets no body. A refusal (not 2xx) and a JSON-RPC error carry none as section 6
// places statuses: they pass without HandoffStatusField, or with it when they carry
// one that verifies.
func (o *egressOffer) answer(ctx context.Context, res *http.Response, body []byte) error {
	res.Header.Set(HandoffHopField, o.hop)
	if res.StatusCode/100 == 2 && hostproto.IsEventStream(res.Header) {
		// The status is read in the stream's response event; the stream passes as it is.
		msg, err := o.eventStreamReply(body)
		if err != nil {
			return err
		}
		body = msg
	}
	needed := res.StatusCode/100 == 2 && hostproto.IsResult(body)
	if res.StatusCode/100 == 2 && !needed && !hostproto.IsError(body) {
		return errcode.New(errcode.MissingCredential, "the reply to the handoff offer is not a JSON-RPC response: it carries no status")
	}
	st, err := agent.HandoffStatus(body)
	if err == nil && st == nil {
		st, err = hostproto.StatusUpdateStatus(body)
	}
	switch {
	case err != nil && needed:
		return err
	case err != nil || st == nil && !needed:
		return nil
	case st == nil:
		return errcode.New(errcode.MissingCredential, "the reply to the handoff offer carries no status from the delegate (section 6)")
	}
	vs, err := o.verify(ctx, *st)
	if err != nil {
		return err
	}
	res.Header.Set(HandoffStatusField, string(vs.State))
	if vs.State == handoff.StateRejected || vs.State == handoff.StateFailed {
		reason := string(vs.ReasonValue())
		if reason == "" && vs.Detail != nil {
			reason = *vs.Detail
		}
		if reason != "" {
			res.Header.Set(HandoffReasonField, reasonFieldValue(reason))
		}
	}
	return nil
}

// verify checks a status as the delegator does (handoff.Delegator.HandleStatus:
// signature with a key the trust binds to status.iss, type status, status.iss the
// offer's aud, status.aud this workload, the hop and the offer's digest). One status
// cannot come from the offer's aud: "rejected" with reason "wrong-audience" (section
// 5.1, step 2) comes from the party that received an offer that was not for it. It is
// taken when it verifies under the key the trust binds to its iss and names this
// offer and this workload: it says that no delegate took the offer.
func (o *egressOffer) verify(ctx context.Context, st handoff.Signed) (*handoff.VerifiedStatus, error) {
	u, err := o.delegator.HandleStatus(ctx, st)
	if err == nil {
		return u.Status, nil
	}
	if errcode.CodeOf(err) != errcode.IssuerMismatch {
		return nil, err
	}
	vs, verr := handoff.VerifyStatusSignature(ctx, o.rh.trust, st, 0)
	if verr != nil || vs.State != handoff.StateRejected || vs.ReasonValue() != handoff.ReasonWrongAudience ||
		vs.Hop != o.hop || !vs.Offer.Equal(o.offer.Offer.Digest()) || vs.Aud != o.rh.self {
		return nil, err
	}
	return vs, nil
}

// reasonFieldValue bounds a reason or detail to MaxHandoffReason octets and
// percent-encodes "%" and every octet outside printable ASCII, so that any text is a
// field value.
func reasonFieldValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		enc := string(r)
		if r < 0x20 || r > 0x7e || r == '%' {
			const digits = "0123456789ABCDEF"
			enc = ""
			for _, c := range []byte(string(r)) {
				enc += "%" + string(digits[c>>4]) + string(digits[c&15])
			}
		}
		if b.Len()+len(enc) > MaxHandoffReason {
			break // whole characters only, so that the value still decodes
		}
		b.WriteString(enc)
	}
	return b.String()
}

// offerFor makes the offer asked for with task (handoffRequest), in the request's
// dialog dc or the one it starts (startDLG).
func (e *Egress) offerFor(ctx context.Context, rt *egressRoute, task string, dc *dialog.Context, startDLG string, body []byte) (*egressOffer, error) {
	var err error
	if rt.handoff == nil {
		return nil, errcode.New(errcode.InvalidRequest, "the route %s names no delegate: it makes no handoff offers", rt.prefix)
	}
	dc, err = handoffDialog(dc, startDLG, e.self)
	if err != nil {
		return nil, err
	}
	return rt.handoff.makeOffer(ctx, dc, task, body)
}

// handoffDialog is the dialog an offer is made in: the request's, or the one it starts.
func handoffDialog(dc *dialog.Context, startDLG string, self identifier.ID) (*dialog.Context, error) {
	if dc != nil {
		return dc, nil
	}
	if startDLG == "" {
		return nil, errcode.New(errcode.InvalidRequest, "a handoff offer is made in a dialog: send a Dialog-Context or %s: ?1", StartDialogField)
	}
	return dialog.New(startDLG, self)
}

// Bounds of the offers an egress route remembers for their cancel (HandoffCancelField):
// the newest MaxRememberedOffers, each for RememberedOfferTTL after it was sent. An
// older hop's cancel is refused as an unknown hop (handoff_offer_mismatch).
const (
	MaxRememberedOffers = 4096
	RememberedOfferTTL  = time.Hour
)

// sentOffer is an offer the egress sent, remembered for its cancel.
type sentOffer struct {
	// delegator is the exchange's own: it holds the offer (its digest, its aud) and the
	// state the verified reply set, so that Delegator.Cancel signs the "canceled"
	// status and refuses it for a resolved hop (section 4).
	delegator *handoff.Delegator
	dlg       string
	id        []byte // the JSON-RPC id of the request that carried the offer, compact
	until     time.Time
}

// sentOffers is a route's bounded record of the offers it sent, by hop.
type sentOffers struct {
	mu    sync.Mutex
	hops  map[string]*sentOffer
	order []string // oldest first; the TTL is one, so the oldest also expires first
}

// remember records the offer o once its request was sent: from then on the delegate may
// have taken the hop.
func (o *egressOffer) remember(body []byte) {
	id, _ := hostproto.CompactJSON(hostproto.RequestID(body)) // placeOffer checked the id
	now := o.rh.now()
	so := &sentOffer{delegator: o.delegator, dlg: o.dlg, id: id, until: now.Add(RememberedOfferTTL)}
	s := o.rh.sent
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.order) > 0 && (len(s.hops) >= MaxRememberedOffers || !now.Before(s.hops[s.order[0]].until)) {
		delete(s.hops, s.order[0])
		s.order = s.order[1:]
	}
	if _, ok := s.hops[o.hop]; !ok {
		s.order = append(s.order, o.hop)
	}
	s.hops[o.hop] = so
}

// lookup returns the unexpired offer of hop, or nil.
func (s *sentOffers) lookup(hop string, now time.Time) *sentOffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	so := s.hops[hop]
	if so == nil || !now.Before(so.until) {
		return nil
	}
	return so
}

// handoffCancelRequest reads HandoffCancelField: the hop the request cancels, "" for none.
func handoffCancelRequest(h http.Header) (string, error) {
	vals := h.Values(HandoffCancelField)
	switch {
	case len(vals) == 0:
		return "", nil
	case len(vals) > 1:
		return "", errcode.New(errcode.DuplicateField, "more than one %s field", HandoffCancelField)
	}
	hop := strings.TrimSpace(vals[0])
	if hop == "" || len(hop) > MaxHandoffTask || strings.ContainsFunc(hop, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return "", errcode.New(errcode.InvalidRequest, "%s must be a hop identifier (base64url, 1 to %d octets)", HandoffCancelField, MaxHandoffTask)
	}
	return hop, nil
}

// cancelFor signs the delegator's "canceled" status for hop, an offer the route sent
// (section 4), and places it in body, the host protocol's cancel (section 6). Every
// check runs before the hop is marked canceled.
func (e *Egress) cancelFor(ctx context.Context, rt *egressRoute, hop string, dc *dialog.Context, body []byte) ([]byte, error) {
	rh := rt.handoff
	if rh == nil {
		return nil, errcode.New(errcode.InvalidRequest, "the route %s names no delegate: it made no handoff offers to cancel", rt.prefix)
	}
	so := rh.sent.lookup(hop, rh.now())
	if so == nil {
		return nil, errcode.New(errcode.HandoffOfferMismatch, "the route %s sent no offer for hop %s, or no longer remembers it", rt.prefix, hop)
	}
	if dc == nil || dc.DLG() != so.dlg {
		return nil, errcode.New(errcode.InvalidRequest, "the cancel of hop %s goes in its offer's dialog %q, named in Dialog-Context", hop, so.dlg)
	}
	if _, err := placeCancel(rh.host, body, so.id, nil); err != nil {
		return nil, err
	}
	st, err := so.delegator.Cancel(ctx, hop)
	if err != nil {
		return nil, err
	}
	return placeCancel(rh.host, body, so.id, &st)
}

// placeCancel puts the "canceled" status st (nil: only check) in the host's cancel:
// the _meta of the params of an MCP notifications/cancelled whose requestId is offerID
// (the same id by value, hostproto.SameID), the id of the tools/call that carried the offer; the metadata of the params of an A2A
// 0.3 tasks/cancel or an A2A 1.0 CancelTask.
func placeCancel(host hostproto.Host, body, offerID []byte, st *handoff.Signed) ([]byte, error) {
	var env map[string]json.RawMessage
	if err := netjson.DecodeObject(body, &env); err != nil || env == nil {
		return nil, errcode.New(errcode.InvalidRequest, "a handoff cancel rides in a JSON-RPC message: the body is not a JSON object")
	}
	var method string
	if json.Unmarshal(env["method"], &method) != nil || string(env["jsonrpc"]) != `"2.0"` {
		return nil, errcode.New(errcode.InvalidRequest, "a handoff cancel rides in a JSON-RPC 2.0 message: no method")
	}
	want := host.CancelMethod()
	if method != want {
		return nil, errcode.New(errcode.InvalidRequest, "the route's %s cancels carry the handoff cancel in %s, not in %q", host, want, errcode.Cut(method))
	}
	params := env["params"]
	var p map[string]json.RawMessage
	if err := netjson.DecodeObject(params, &p); err != nil || p == nil {
		return nil, errcode.New(errcode.InvalidRequest, "the %s params are not an object", method)
	}
	var (
		found *handoff.Signed
		err   error
	)
	if host == hostproto.MCP {
		if len(offerID) == 0 || !hostproto.SameID(p["requestId"], offerID) {
			return nil, errcode.New(errcode.InvalidRequest, "the notifications/cancelled must name in params.requestId the request that carried the hop's offer (id %s)", errcode.Cut(string(offerID)))
		}
		found, err = handoff.MCPCancelStatus(params)
	} else {
		if id, ok := env["id"]; !ok || string(id) == "null" {
			return nil, errcode.New(errcode.InvalidRequest, "the %s request has no id", method)
		}
		found, err = handoff.A2ACancelStatus(params)
	}
	if err != nil || found != nil {
		return nil, errcode.New(errcode.HandoffUnplaced, "the cancel already carries a handoff status: the egress places it (%s)", HandoffCancelField)
	}
	if st == nil {
		return body, nil
	}
	if host == hostproto.MCP {
		params, err = handoff.PutMCPCancel(params, *st)
	} else {
		params, err = handoff.PutA2ACancel(params, *st)
	}
	if err != nil {
		return nil, err
	}
	return hostproto.SetMember(env, "params", params, "request body")
}
