package dialog

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/httpbody"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/problem"
)

// MaxHandoffBody bounds the body read to find a handoff.
const MaxHandoffBody = 1 << 20

// HandoffExtractor finds a Handoff in a request body; (nil, nil) when there is none.
type HandoffExtractor func(body []byte) (*handoff.Handoff, error)

// JSONRPCHandoff finds a handoff carried as handoff-context section 6 says, in the
// JSON-RPC 2.0 body of an MCP request (params._meta), an A2A 0.3 message
// ("message/send", "message/stream") or an A2A 1.0 one ("SendMessage",
// "SendStreamingMessage"): params.message.metadata under the extension URI. It is
// HandoffsIn(hostproto.Hosts()...): a handoff key anywhere else is refused with
// errcode.HandoffUnplaced, never skipped.
func JSONRPCHandoff(body []byte) (*handoff.Handoff, error) {
	return HandoffsIn(hostproto.Hosts()...)(body)
}

// HandoffsIn returns the extractor for handoffs carried in the JSON-RPC requests of
// hosts (section 6; hostproto.Find). It refuses a handoff under a handoff key anywhere
// it does not read one (errcode.HandoffUnplaced): in a request of another host or
// version, in a method that carries none, or a second copy. A "canceled" status (MCP
// notifications/cancelled, A2A cancel) is not an offer: the extractor returns (nil,
// nil) for it; WithHandoffsIn reads it as a status.
func HandoffsIn(hosts ...hostproto.Host) HandoffExtractor {
	hosts = slices.Clone(hosts)
	return func(body []byte) (*handoff.Handoff, error) {
		p, err := hostproto.Find(body, hosts)
		if err != nil || p == nil {
			return nil, err
		}
		return p.Handoff, nil
	}
}

// WithHandoffsIn is WithHandoffs for the JSON-RPC requests of the named hosts (section
// 6): a handoff is read only where those hosts carry one and refused anywhere else
// (errcode.HandoffUnplaced); the reply to a refused offer takes the shape of the host
// and version of the request. A delegator's "canceled" status (MCP
// notifications/cancelled, A2A tasks/cancel or CancelTask) is checked and recorded with
// the handoff receiver's HandleCancel (section 5.6) and the request goes on to the
// handler with the result in Verified.Cancel, so that the host protocol's own cancel
// reaches the work; a cancel that does not verify is refused.
func WithHandoffsIn(r *handoff.Receiver, hosts ...hostproto.Host) ReceiverOption {
	hosts = slices.Clone(hosts)
	return func(rc *Receiver) {
		rc.handoffs = r
		rc.place = func(body []byte) (*hostproto.Carried, error) { return hostproto.Find(body, hosts) }
	}
}

// WithHandoffs makes the receiver check a signed handoff that travels with a request
// (handoff-context section 5 with 5.7): its dialog must be the request's Dialog-Context
// dlg, and its grant the digest of the credential that arrived with the request: the
// Txn-Token within a trust domain, else the bearer access token of the Authorization
// field (across a trust boundary). The handler finds an accepted offer's decision in
// Verified.Handoff and takes or refuses the work with the handoff receiver. A rejected
// offer, and a retransmission, are answered by the middleware without the handler:
// with the signed "rejected" status (section 5.1), or the last status resent only to
// the authenticated offer.iss (sections 5.3, 8.4), in the host protocol's reply. For a
// JSON-RPC request that is a result on 200 (A2A: a Message with the status in its
// metadata; MCP: a CallToolResult with it in _meta, section 6); for any other request,
// the refusal's problem document and HTTP status with the status in its
// HandoffStatusMember member. agent.HandoffStatus reads it back from any of them.
// Without a status to send, and for a request that would have established its dialog
// (which a refused request does not take, so no reply may echo its Dialog-Context),
// the refusal goes alone: for a JSON-RPC request with an id, a JSON-RPC error on 200
// with the stable code and kind in its data (handoffReply.writeError); for any other
// request, the bare problem document, as before.
// extract nil reads the JSON-RPC requests of every host (WithHandoffsIn(r,
// hostproto.Hosts()...)), canceled statuses included; name the hosts served with
// WithHandoffsIn.
// An extractor of the integrator's own finds offers only; the reply to a refused one
// still takes the shape of the request's host protocol.
func WithHandoffs(r *handoff.Receiver, extract HandoffExtractor) ReceiverOption {
	if extract == nil {
		return WithHandoffsIn(r, hostproto.Hosts()...)
	}
	return func(rc *Receiver) {
		rc.handoffs = r
		rc.place = func(body []byte) (*hostproto.Carried, error) {
			h, err := extract(body)
			if err != nil || h == nil {
				return nil, err
			}
			p := &hostproto.Carried{Handoff: h}
			if env, ok := hostproto.ParseRequest(body); ok {
				p.Host, p.ID = hostproto.HostOf(env.Method), env.ID
				p.Dialog = hostproto.ContextID(env.Method, env.Params)
			}
			return p, nil
		}
	}
}

// HandoffStatusMember is the member of the problem document that carries the signed
// status answering a handoff carried outside JSON-RPC (a HandoffExtractor of the
// integrator's own): its JSON carriage form (a JwsCompact, or base64url text of a
// COSE_Sign1), as in the metadata of section 6.
const HandoffStatusMember = "handoff_status"

// handoffReply is how the receiver answers a request refused at the handoff step,
// instead of running the handler. With a status, it is the signed status the receiver
// answers a refused offer with, in the host protocol's reply: a rejection (section 5.1)
// or the last status resent to a retransmission (5.3), which the handoff receiver
// provides only to an authenticated offer.iss (8.4). Without one (status nil), it names
// the JSON-RPC request that was refused, so that writeError answers in its shape.
type handoffReply struct {
	err    error
	status *handoff.Signed
	host   hostproto.Host  // the request's host protocol; 0 when it is not JSON-RPC
	id     json.RawMessage // its JSON-RPC id
	dialog string          // the dialog of the message (an A2A reply names it as contextId)
}

// jsonrpcRequestOf is the statusless reply naming the JSON-RPC request body is: its
// host and id. It is nil when body is not one, or is a notification (no id) or has an
// id that is neither a string nor a number: those get the problem document (MCP
// Streamable HTTP answers a notification it cannot accept with an HTTP error status).
func jsonrpcRequestOf(body []byte) *handoffReply {
	env, ok := hostproto.ParseRequest(body)
	if !ok {
		return nil
	}
	return (&handoffReply{host: hostproto.HostOf(env.Method), id: env.ID}).withoutStatus()
}

// WriteRefusal answers a request whose body is body with the refusal err at the
// handoff step, in the one form the receiver uses (handoffReply.writeError): a JSON-RPC
// error on HTTP 200 when body is a JSON-RPC request with a string or number id (MCP,
// A2A 0.3, A2A 1.0), the RFC 9457 problem document with its HTTP status otherwise. A
// party that makes offers for a local agent (the egress proxy) answers with it, so that
// the agent's SDK meets a refusal of its call in one shape whichever side refused it.
func WriteRefusal(w http.ResponseWriter, body []byte, err error) {
	jsonrpcRequestOf(body).writeError(w, err)
}

// withoutStatus is the reply without its status, for a refusal that goes alone; nil
// when the request has no id that a JSON-RPC error can name.
func (h *handoffReply) withoutStatus() *handoffReply {
	if h == nil || h.host == 0 || !hostproto.ValidID(h.id) {
		return nil
	}
	return &handoffReply{err: h.err, host: h.host, id: h.id}
}

// writeError is the one error writer of a request refused before its handler ran, chosen
// by the request's host protocol. A JSON-RPC request with an id (MCP, A2A 0.3, A2A 1.0)
// gets a JSON-RPC error response on HTTP 200 with the stable code and kind in its data
// (hostproto.WriteError). Any other request (h nil: plain HTTP, a notification, a
// batch, a body that is not JSON-RPC) gets the RFC 9457 problem document with its HTTP
// status, as before.
func (h *handoffReply) writeError(w http.ResponseWriter, err error) {
	if h == nil || h.host == 0 || !hostproto.ValidID(h.id) {
		problem.Write(w, err)
		return
	}
	hostproto.WriteError(w, h.id, err)
}

// ServeHTTP answers a JSON-RPC request (A2A or MCP, section 6) with a JSON-RPC result
// on 200 that carries the status: for A2A a Message with the status in its metadata
// under the extension URI (A2A 1.0: wrapped as {"message": ...}), for MCP a
// CallToolResult with it in _meta (isError: the tool call was not run). Any other
// request gets the problem document of the refusal, with its HTTP status, and the
// status in the HandoffStatusMember member.
func (h *handoffReply) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if h.host == 0 {
		text, _ := json.Marshal(h.status.Text())
		d, _ := json.Marshal(problem.From(h.err))
		var m map[string]json.RawMessage
		_ = netjson.DecodeObject(d, &m)
		m[HandoffStatusMember] = text
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(problem.Status(h.err))
		_ = json.NewEncoder(w).Encode(m)
		return
	}
	result, err := hostproto.StatusResult(h.host, h.dialog, *h.status)
	if err != nil {
		problem.Write(w, err)
		return
	}
	hostproto.WriteResult(w, h.id, result)
}

// readBody reads r's body, bounded by MaxHandoffBody, and puts the octets back for
// the handler; nil without a body.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := httpbody.Read(r.Body, MaxHandoffBody, "request body")
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, err
}

// receiveHandoff runs after the proof, the dialog and the Txn-Token are verified, on
// the body readBody read (nil without one). When the offer is refused with a signed
// status to send back, it returns that reply too; any other refusal of a JSON-RPC
// request comes with the statusless reply that names the request, so that it is
// answered as a JSON-RPC error (handoffReply.writeError).
func (rc *Receiver) receiveHandoff(r *http.Request, v *Verified, body []byte) (*handoffReply, error) {
	if body == nil {
		return nil, nil
	}
	reply, err := rc.receiveHandoffIn(r, v, body)
	if err != nil && reply == nil {
		reply = jsonrpcRequestOf(body)
	}
	return reply, err
}

// receiveHandoffIn finds the handoff or the canceled status in body and has the
// handoff receiver decide on it.
func (rc *Receiver) receiveHandoffIn(r *http.Request, v *Verified, body []byte) (*handoffReply, error) {
	p, err := rc.place(body)
	if err != nil || p == nil {
		return nil, err
	}
	if p.Cancel != nil {
		// A delegator's "canceled" status (section 6): a status, not an offer. It is
		// checked and recorded (section 5.6), and the host protocol's cancel goes on to
		// the handler, which stops the work.
		res, err := rc.handoffs.HandleCancel(r.Context(), *p.Cancel)
		if err != nil {
			return nil, err
		}
		v.Cancel = res
		return nil, nil
	}
	if p.Handoff == nil {
		return nil, nil
	}
	in := handoff.Inbound{Handoff: p.Handoff, AuthenticatedSender: v.Sender.String()}
	// Step 5 (handoff-context 5.1): the offer's dialog is the dialog of the message that
	// carries it. The message names it in Dialog-Context, in the host protocol (A2A
	// contextId), or both, which must then agree; a message that names none cannot be
	// checked and is refused rather than let through unchecked.
	host := p.Dialog
	switch {
	case v.Context != nil && host != "" && host != v.Context.DLG():
		return nil, errcode.New(errcode.HandoffPolicy, "the message's contextId %q is not its Dialog-Context dlg %q", errcode.Cut(host), v.Context.DLG())
	case v.Context != nil:
		in.Dialog = v.Context.DLG()
	case host != "":
		in.Dialog = host
	default:
		return nil, errcode.New(errcode.HandoffPolicy, "the message names no dialog (no Dialog-Context, no contextId): the offer's dialog cannot be checked")
	}
	switch {
	case v.TxnToken != "":
		in.Credential = []byte(v.TxnToken)
	default:
		if tok := bearer(r.Header); tok != "" {
			in.Credential = []byte(tok)
		}
	}
	d, err := rc.handoffs.Receive(r.Context(), in)
	if rc.auditor != nil {
		v.audit.hop = hopOf(d, nil) // a verified offer's hop, refused or not
	}
	if err != nil {
		// A rejection, or a retransmission, with a status to send: section 5.1 and
		// 5.3 answer it in the host protocol's reply. The handoff receiver sets Reply
		// for a retransmission only when the sender is offer.iss (section 8.4). An
		// equivocating offer is never answered for itself (section 5.6).
		if d != nil && d.Reply != nil && (d.Outcome == handoff.OutcomeRejected || d.Outcome == handoff.OutcomeRetransmission) {
			return &handoffReply{err: err, status: d.Reply, host: p.Host, id: p.ID, dialog: in.Dialog}, err
		}
		return nil, err
	}
	v.Handoff = d
	if d.Outcome != handoff.OutcomeAccepted && d.Err != nil {
		return nil, d.Err
	}
	return nil, nil
}

// bearer returns the token of an `Authorization: Bearer` field, "" otherwise.
func bearer(h http.Header) string {
	vals := h.Values("Authorization")
	if len(vals) != 1 {
		return ""
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
