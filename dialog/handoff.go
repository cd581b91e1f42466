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
// HandoffsIn(MCP, A2A03, A2A10): a handoff key anywhere else is refused with
// errcode.HandoffUnplaced, never skipped.
func JSONRPCHandoff(body []byte) (*handoff.Handoff, error) {
	return HandoffsIn(allHosts...)(body)
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
// extract nil reads the JSON-RPC requests of every Host (WithHandoffsIn(r, MCP, A2A03,
// A2A10)), canceled statuses included; name the hosts served with WithHandoffsIn.
// An extractor of the integrator's own finds offers only; the reply to a refused one
// still takes the shape of the request's host protocol.
func WithHandoffs(r *handoff.Receiver, extract HandoffExtractor) ReceiverOption {
	if extract == nil {
		return WithHandoffsIn(r, allHosts...)
	}
	return func(rc *Receiver) {
		rc.handoffs = r
		rc.place = func(body []byte) (*placed, error) {
			h, err := extract(body)
			if err != nil || h == nil {
				return nil, err
			}
			p := &placed{handoff: h}
			if env, ok := envelope(body); ok {
				p.host, p.id = hostOfMethod(env.Method), env.ID
				p.dialog = contextIDOf(p.host, env.Method, env.Params)
			}
			return p, nil
		}
	}
}

// contextIDOf is the contextId of the message an A2A request carries, "" otherwise.
func contextIDOf(host Host, method string, params json.RawMessage) string {
	if (host != A2A03 || !slices.Contains(a2a03MessageMethods, method)) && (host != A2A10 || !slices.Contains(a2a10MessageMethods, method)) {
		return ""
	}
	var p struct {
		Message struct {
			ContextID string `json:"contextId"`
		} `json:"message"`
	}
	_ = netjson.DecodeObject(params, &p)
	return p.Message.ContextID
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
	host   Host            // the request's host protocol; 0 when it is not JSON-RPC
	id     json.RawMessage // its JSON-RPC id
	dialog string          // the dialog of the message (an A2A reply names it as contextId)
}

// JSON-RPC 2.0 error codes (section 5.1) of a refusal at the handoff step: the handoff
// travels in the params, so a failed check is "Invalid params"; a check that could not
// be completed is the server's own "Internal error". The host protocols' own codes
// (A2A -32001 to -32009, MCP -32002, -32042) are left alone: their meanings are not
// ours. The stable code and kind are in the error's data.
const (
	jsonrpcInvalidParams = -32602
	jsonrpcInternalError = -32603
)

// jsonrpcRequestOf is the statusless reply naming the JSON-RPC request body is: its
// host and id. It is nil when body is not one, or is a notification (no id) or has an
// id that is neither a string nor a number: those get the problem document (MCP
// Streamable HTTP answers a notification it cannot accept with an HTTP error status).
func jsonrpcRequestOf(body []byte) *handoffReply {
	env, ok := envelope(body)
	if !ok {
		return nil
	}
	return (&handoffReply{host: hostOfMethod(env.Method), id: env.ID}).withoutStatus()
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
	if h == nil || h.host == 0 || !validJSONRPCID(h.id) {
		return nil
	}
	return &handoffReply{err: h.err, host: h.host, id: h.id}
}

// validJSONRPCID reports an id a JSON-RPC response can echo: a string or a number (MCP
// forbids null, and JSON-RPC keeps null for an id that could not be read).
func validJSONRPCID(id json.RawMessage) bool {
	var v any
	if len(id) == 0 || json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// writeError is the one error writer of a request refused before its handler ran, chosen
// by the request's host protocol. A JSON-RPC request with an id (MCP, A2A 0.3, A2A 1.0)
// gets a JSON-RPC error response on HTTP 200, as MCP Streamable HTTP and A2A's JSON-RPC
// binding carry errors in the body, so that an SDK client surfaces it as the call's
// error rather than as a failed transport: {"jsonrpc":"2.0","id":<the request's>,
// "error":{"code":-32602 (failed) or -32603 (could not be completed),"message":"<code>:
// <detail>","data":{"type","code","kind","detail","error"}}}, data holding the problem
// document's type, code, kind and detail, and "error" the message again (a2a-go 0.3
// surfaces only that member of the data). Any other request (h nil: plain HTTP, a
// notification, a batch, a body that is not JSON-RPC) gets the RFC 9457 problem
// document with its HTTP status, as before.
func (h *handoffReply) writeError(w http.ResponseWriter, err error) {
	if h == nil || h.host == 0 || !validJSONRPCID(h.id) {
		problem.Write(w, err)
		return
	}
	d := problem.From(err)
	code := jsonrpcInvalidParams
	if errcode.KindOf(err) == errcode.Incomplete {
		code = jsonrpcInternalError
	}
	msg := d.Code
	if d.Detail != "" {
		msg += ": " + d.Detail
	}
	type errorData struct {
		Type   string `json:"type"`
		Code   string `json:"code"`
		Kind   string `json:"kind"`
		Detail string `json:"detail,omitempty"`
		Error  string `json:"error"`
	}
	type rpcError struct {
		Code    int       `json:"code"`
		Message string    `json:"message"`
		Data    errorData `json:"data"`
	}
	body := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", h.id, rpcError{code, msg, errorData{d.Type, d.Code, d.Kind, d.Detail, msg}}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(body)
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
		_ = json.Unmarshal(d, &m)
		m[HandoffStatusMember] = text
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(problem.Status(h.err))
		_ = json.NewEncoder(w).Encode(m)
		return
	}
	var result []byte
	var err error
	// The messageId names the status, so that a resent status is the same reply.
	msgID := "handoff-status-" + h.status.Digest().Val
	switch h.host {
	case A2A03:
		msg, _ := json.Marshal(map[string]any{"kind": "message", "role": "agent", "messageId": msgID,
			"contextId": h.dialog, "parts": []any{}})
		result, err = handoff.PutA2AStatus(msg, *h.status)
	case A2A10:
		// A 1.0 Message has at least one part; a SendMessage result names its kind.
		msg, _ := json.Marshal(map[string]any{"role": "ROLE_AGENT", "messageId": msgID,
			"contextId": h.dialog, "parts": []any{map[string]any{"text": "handoff status"}}})
		if msg, err = handoff.PutA2AStatus(msg, *h.status); err == nil {
			result, err = json.Marshal(map[string]json.RawMessage{"message": msg})
		}
	default:
		// isError: the tool call was refused and not run, whatever the status says;
		// the same for a first rejection and its retransmissions.
		res, _ := json.Marshal(map[string]any{"content": []any{}, "isError": true})
		result, err = handoff.PutMCPResult(res, *h.status)
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	id := h.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": id, "result": result})
}

// receiveHandoff runs after the proof, the dialog and the Txn-Token are verified. When
// the offer is refused with a signed status to send back, it returns that reply too;
// any other refusal of a JSON-RPC request comes with the statusless reply that names
// the request, so that it is answered as a JSON-RPC error (handoffReply.writeError).
// A body that could not be read, or is too large, has no request to name.
func (rc *Receiver) receiveHandoff(r *http.Request, v *Verified) (*handoffReply, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxHandoffBody+1))
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "the request body could not be read") // the client's broken body: a failed check
	}
	if len(body) > MaxHandoffBody {
		return nil, errcode.New(errcode.BodyTooLarge, "body over %d octets", MaxHandoffBody)
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
	if p.cancel != nil {
		// A delegator's "canceled" status (section 6): a status, not an offer. It is
		// checked and recorded (section 5.6), and the host protocol's cancel goes on to
		// the handler, which stops the work.
		res, err := rc.handoffs.HandleCancel(r.Context(), *p.cancel)
		if err != nil {
			return nil, err
		}
		v.Cancel = res
		return nil, nil
	}
	if p.handoff == nil {
		return nil, nil
	}
	in := handoff.Inbound{Handoff: p.handoff, AuthenticatedSender: v.Sender.String()}
	// Step 5 (handoff-context 5.1): the offer's dialog is the dialog of the message that
	// carries it. The message names it in Dialog-Context, in the host protocol (A2A
	// contextId), or both, which must then agree; a message that names none cannot be
	// checked and is refused rather than let through unchecked.
	host := p.dialog
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
	if err != nil {
		// A rejection, or a retransmission, with a status to send: section 5.1 and
		// 5.3 answer it in the host protocol's reply. The handoff receiver sets Reply
		// for a retransmission only when the sender is offer.iss (section 8.4). An
		// equivocating offer is never answered for itself (section 5.6).
		if d != nil && d.Reply != nil && (d.Outcome == handoff.OutcomeRejected || d.Outcome == handoff.OutcomeRetransmission) {
			return &handoffReply{err: err, status: d.Reply, host: p.host, id: p.id, dialog: in.Dialog}, err
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
