package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// OfferInDialog signs a handoff of work to a delegate in dialog dc, within a trust
// domain (handoff-context section 5.7): the offer's dialog is dc's dlg and its grant is
// the digest of the Txn-Token the request will carry. It returns the handoff and a
// context on which the Transport sends exactly that token, so that the grant and the
// credential cannot drift apart.
func OfferInDialog(ctx context.Context, d *handoff.Delegator, tokens TxnTokenSource, dc *dialog.Context, req handoff.OfferRequest) (*handoff.Handoff, context.Context, error) {
	if tokens == nil || dc == nil {
		return nil, nil, errcode.New(errcode.InvalidRequest, "a handoff in a dialog needs the dialog and its Txn-Token source")
	}
	tok, err := tokens.TxnToken(ctx, dc.DLG())
	if err != nil {
		return nil, nil, err
	}
	h, err := OfferWithCredential(ctx, d, tok, dc, req)
	if err != nil {
		return nil, nil, err
	}
	return h, WithTxnTokenSource(ctx, Forwarded(tok)), nil
}

// OfferWithCredential signs a handoff whose grant is the digest of credential: the
// access token the request across a trust boundary carries as `Authorization: Bearer`
// (the receiver checks the same octets). dc may be nil for a request outside a dialog.
func OfferWithCredential(ctx context.Context, d *handoff.Delegator, credential string, dc *dialog.Context, req handoff.OfferRequest) (*handoff.Handoff, error) {
	if credential == "" {
		return nil, errcode.New(errcode.InvalidRequest, "no credential to bind the grant to")
	}
	g := handoff.BindGrant([]byte(credential))
	req.Offer.Grant = &g
	if dc != nil {
		req.Offer.Dialog = dc.DLG()
	}
	return d.Offer(ctx, req)
}

// A2AMessageSend builds the JSON-RPC body of an A2A 0.3 "message/send" whose message
// carries h (handoff-context section 6): the form dialog.JSONRPCHandoff reads. It is
// A2ASendMessage(hostproto.A2A03, ...).
func A2AMessageSend(id any, message json.RawMessage, h *handoff.Handoff) ([]byte, error) {
	return A2ASendMessage(hostproto.A2A03, id, message, h)
}

// A2ASendMessage builds the JSON-RPC body of an A2A request whose message carries h
// (handoff-context section 6), with the unary message method of the A2A version host
// names (hostproto.Host.OfferMethods): "message/send" for hostproto.A2A03,
// "SendMessage" for hostproto.A2A10.
func A2ASendMessage(host hostproto.Host, id any, message json.RawMessage, h *handoff.Handoff) ([]byte, error) {
	if !host.IsA2A() {
		return nil, errcode.New(errcode.InvalidRequest, "%s is not an A2A version", host)
	}
	method := host.OfferMethods()[0]
	msg, err := handoff.PutA2AMessage(message, h)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": method,
		"params": map[string]json.RawMessage{"message": msg},
	})
}

// NewA2ARequest builds the HTTP request of an A2A JSON-RPC call to url whose message
// carries h (A2ASendMessage), listing the extension as section 6 asks ("A client also
// lists the URI in the A2A-Extensions service parameter"): in A2A-Extensions for A2A
// 1.0, and under both names (A2A-Extensions and X-A2A-Extensions) for an A2A 0.3
// server, which reads the second. An A2A 1.0 request also names its version in the
// A2A-Version service parameter: a 1.0 server takes a request without it for 0.3 (the
// A2A JavaScript SDK refuses it as an unsupported version). Send it through the
// Transport (Agent.Continue).
func NewA2ARequest(ctx context.Context, host hostproto.Host, url string, id any, message json.RawMessage, h *handoff.Handoff) (*http.Request, error) {
	body, err := A2ASendMessage(host, id, message, h)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "A2A request")
	}
	req.Header.Set("Content-Type", "application/json")
	hostproto.ListExtension(host, req.Header)
	if host == hostproto.A2A10 {
		req.Header.Set(hostproto.A2AVersionHeader, "1.0")
	}
	return req, nil
}

// HandoffStatus takes the delegate's signed status out of the body of a reply to a
// request that carried a handoff, in any of the shapes dialog.WithHandoffs answers
// with: a JSON-RPC result that is an A2A Message (status in metadata), an A2A Task
// (in its status message), either wrapped as A2A 1.0 does ({"message": ...},
// {"task": ...}), or an MCP CallToolResult (in _meta), handoff-context section
// 6; or a problem document with the dialog.HandoffStatusMember member. It returns
// (nil, nil) when the reply carries none. The status is not verified here: hand it to
// handoff.Delegator.HandleStatus.
func HandoffStatus(body []byte) (*handoff.Signed, error) {
	var env map[string]json.RawMessage
	if err := netjson.DecodeObject(body, &env); err != nil || env == nil {
		return nil, errcode.New(errcode.InvalidEncoding, "the reply is not a JSON object")
	}
	if v, ok := env[dialog.HandoffStatusMember]; ok {
		var text string
		if err := netjson.DecodeObject(v, &text); err != nil {
			return nil, errcode.New(errcode.InvalidEncoding, "%s is not a signed handoff in text form", dialog.HandoffStatusMember)
		}
		s, err := handoff.ParseSignedText(text)
		if err != nil {
			return nil, err
		}
		return &s, nil
	}
	result, ok := env["result"]
	if !ok || string(result) == "null" {
		return nil, nil
	}
	return hostproto.ResultStatus(result)
}
