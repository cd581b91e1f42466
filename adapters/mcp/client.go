package dialogmcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/httpbody"
)

// maxCallBody bounds a request body the client reads to find an offer or a cancel.
const maxCallBody = 8 << 20

// NewHTTPClient returns the *http.Client to set as
// mcp.StreamableClientTransport.HTTPClient: every request of the session goes through
// c.Transport, in c.Dialog. With c.Delegator, the notifications/cancelled go-sdk sends
// for a tool call that carried one of its offers gets its "canceled" status.
func NewHTTPClient(c agent.HostClientConfig) (*http.Client, error) {
	if err := c.Check("MCP"); err != nil {
		return nil, err
	}
	return &http.Client{Transport: &roundTripper{cfg: c}}, nil
}

type callKey struct{ session, id string }

type roundTripper struct {
	cfg  agent.HostClientConfig
	hops agent.OfferedHops[callKey] // tool calls that carried an offer, by session and JSON-RPC id
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(rt.cfg.InDialog(req.Context()))
	var key callKey
	if rt.cfg.Delegator != nil && req.Method == http.MethodPost && req.Body != nil && req.Body != http.NoBody {
		body, err := httpbody.Read(req.Body, maxCallBody, "request body")
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if body, key, err = rt.inspect(out, body); err != nil {
			return nil, err
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
	}
	res, err := rt.cfg.Transport.RoundTrip(out)
	if err != nil || key == (callKey{}) {
		return res, err
	}
	// The call's result arrived in full: no cancel can follow it. A body that ends
	// otherwise (the call's context ended) keeps the hop for the cancel go-sdk sends.
	res.Body = &forgetAtEOF{ReadCloser: res.Body, forget: func() { rt.hops.Take(key) }}
	return res, nil
}

// inspect remembers a tool call that carries an offer, and adds the "canceled" status
// to the cancel of one. It returns the body to send and the key of a remembered call.
func (rt *roundTripper) inspect(req *http.Request, body []byte) ([]byte, callKey, error) {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil {
		return body, callKey{}, nil // a batch or not JSON: go-sdk sends neither with an offer
	}
	var method string
	_ = json.Unmarshal(env["method"], &method)
	session := req.Header.Get("Mcp-Session-Id")
	switch {
	case hostproto.MCP.IsOfferMethod(method):
		id := env["id"]
		h, err := handoff.MCPRequestHandoff(env["params"])
		if err != nil || h == nil || len(id) == 0 {
			return body, callKey{}, nil // the receiver refuses what is malformed
		}
		o, err := handoff.DecodeOffer(h.Offer)
		if err != nil {
			return body, callKey{}, nil
		}
		key := callKey{session, string(id)}
		rt.hops.Remember(key, o.Hop)
		return body, key, nil
	case method == hostproto.MCP.CancelMethod():
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(env["params"], &p) != nil || len(p.RequestID) == 0 {
			return body, callKey{}, nil
		}
		key := callKey{session, string(p.RequestID)}
		hop := rt.hops.Take(key)
		if hop == "" {
			return body, callKey{}, nil
		}
		if s, err := handoff.MCPCancelStatus(env["params"]); err != nil || s != nil {
			return body, callKey{}, nil // the caller placed one itself
		}
		canceled, err := rt.cfg.Delegator.Cancel(req.Context(), hop)
		if err != nil {
			// A hop already resolved cannot be canceled: the cancel goes as go-sdk
			// made it, and the work it asks to stop has ended anyway.
			return body, callKey{}, nil
		}
		params, err := handoff.PutMCPCancel(env["params"], canceled)
		if err != nil {
			return nil, callKey{}, err
		}
		env["params"] = params
		b, err := json.Marshal(env)
		if err != nil {
			return nil, callKey{}, errcode.Wrap(errcode.InvalidEncoding, err, "cancel notification")
		}
		return b, callKey{}, nil
	}
	return body, callKey{}, nil
}

// forgetAtEOF runs forget once the body has been read to its end.
type forgetAtEOF struct {
	io.ReadCloser
	forget func()
	once   sync.Once
}

func (f *forgetAtEOF) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if err == io.EOF {
		f.once.Do(f.forget)
	}
	return n, err
}

// PutOffer places h under handoff.MCPMetaKey in the call's _meta, as JSON-native
// values (section 6), keeping the other members of _meta.
func PutOffer(p *mcp.CallToolParams, h *handoff.Handoff) error {
	m, err := handoff.PutHandoffMeta(p.Meta, handoff.MCPMetaKey, h)
	if err != nil {
		return err
	}
	p.Meta = m
	return nil
}

// ResultStatus reads the delegate's signed status from a CallToolResult's _meta,
// (nil, nil) when there is none. It is not verified here: hand it to
// handoff.Delegator.HandleStatus.
func ResultStatus(r *mcp.CallToolResult) (*handoff.Signed, error) {
	if r == nil {
		return nil, nil
	}
	return handoff.StatusInMeta(r.Meta, handoff.MCPMetaKey)
}

// PutStatus places a signed status under handoff.MCPMetaKey in a CallToolResult's
// _meta (section 6).
func PutStatus(r *mcp.CallToolResult, s handoff.Signed) error {
	m, err := handoff.PutStatusMeta(r.Meta, handoff.MCPMetaKey, s)
	if err != nil {
		return err
	}
	r.Meta = m
	return nil
}
