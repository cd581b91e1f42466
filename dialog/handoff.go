package dialog

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/internal/exactjson"
)

// MaxHandoffBody bounds the body read to find a handoff.
const MaxHandoffBody = 1 << 20

// HandoffExtractor finds a Handoff in a request body; (nil, nil) when there is none.
type HandoffExtractor func(body []byte) (*handoff.Handoff, error)

// JSONRPCHandoff finds a handoff carried as handoff-context section 6 says, in the
// JSON-RPC 2.0 body of an A2A message (method "message/send" or "message/stream":
// params.message.metadata under the extension URI) or of an MCP request (any other
// method: params._meta).
func JSONRPCHandoff(body []byte) (*handoff.Handoff, error) {
	var env struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if len(bytes.TrimSpace(body)) == 0 || exactjson.Unmarshal(body, &env) != nil || env.Method == "" || len(env.Params) == 0 {
		return nil, nil // not JSON-RPC: no handoff can ride in it
	}
	if strings.HasPrefix(env.Method, "message/") {
		var p struct {
			Message json.RawMessage `json:"message"`
		}
		if err := exactjson.Unmarshal(env.Params, &p); err != nil || len(p.Message) == 0 {
			return nil, errcode.New(errcode.InvalidRequest, "A2A params without a message")
		}
		return handoff.A2AMessageHandoff(p.Message)
	}
	return handoff.MCPRequestHandoff(env.Params)
}

// hostDialog returns the host protocol's dialog identifier of a JSON-RPC body: the
// contextId of an A2A message ("" when there is none, or for MCP, which carries none).
func hostDialog(body []byte) string {
	var env struct {
		Method string `json:"method"`
		Params struct {
			Message struct {
				ContextID string `json:"contextId"`
			} `json:"message"`
		} `json:"params"`
	}
	if exactjson.Unmarshal(body, &env) != nil || !strings.HasPrefix(env.Method, "message/") {
		return ""
	}
	return env.Params.Message.ContextID
}

// WithHandoffs makes the receiver check a signed handoff that travels with a request
// (handoff-context section 5 with 5.7): its dialog must be the request's Dialog-Context
// dlg, and its grant the digest of the credential that arrived with the request: the
// Txn-Token within a trust domain, else the bearer access token of the Authorization
// field (across a trust boundary). The handler finds the decision in Verified.Handoff
// and takes or refuses the work with the handoff receiver. extract defaults to
// JSONRPCHandoff.
func WithHandoffs(r *handoff.Receiver, extract HandoffExtractor) ReceiverOption {
	if extract == nil {
		extract = JSONRPCHandoff
	}
	return func(rc *Receiver) { rc.handoffs, rc.extract = r, extract }
}

// receiveHandoff runs after the proof, the dialog and the Txn-Token are verified.
func (rc *Receiver) receiveHandoff(r *http.Request, v *Verified) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxHandoffBody+1))
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "the request body could not be read") // the client's broken body: a failed check
	}
	if len(body) > MaxHandoffBody {
		return errcode.New(errcode.BodyTooLarge, "body over %d octets", MaxHandoffBody)
	}
	h, err := rc.extract(body)
	if err != nil || h == nil {
		return err
	}
	in := handoff.Inbound{Handoff: h, AuthenticatedSender: v.Sender.String()}
	// Step 5 (handoff-context 5.1): the offer's dialog is the dialog of the message that
	// carries it. The message names it in Dialog-Context, in the host protocol (A2A
	// contextId), or both, which must then agree; a message that names none cannot be
	// checked and is refused rather than let through unchecked.
	host := hostDialog(body)
	switch {
	case v.Context != nil && host != "" && host != v.Context.DLG():
		return errcode.New(errcode.HandoffPolicy, "the message's contextId %q is not its Dialog-Context dlg %q", errcode.Cut(host), v.Context.DLG())
	case v.Context != nil:
		in.Dialog = v.Context.DLG()
	case host != "":
		in.Dialog = host
	default:
		return errcode.New(errcode.HandoffPolicy, "the message names no dialog (no Dialog-Context, no contextId): the offer's dialog cannot be checked")
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
		return err
	}
	v.Handoff = d
	if d.Outcome != handoff.OutcomeAccepted && d.Err != nil {
		return d.Err
	}
	return nil
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
