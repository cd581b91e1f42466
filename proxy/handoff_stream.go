package proxy

import (
	"bytes"
	"context"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
)

// A reply to a handoff offer may be a finite event stream (MCP Streamable HTTP, A2A
// message/stream and SendStreamingMessage): hostproto reads it (the WHATWG
// event-stream format, bounded by MaxBody and hostproto.MaxStreamEvents) and finds
// the response event to the request; here the two sides use it.

// answerStream is the ingress's answer for an event stream: the status goes in the
// response event to the request (hostproto.StreamReply) exactly as in an application/json
// reply, and the stream is re-emitted with every other octet unchanged. A stream that
// is not well formed or carries no response is refused as one in which no status can
// be placed: a stated outcome is still recorded, for a retransmission.
func (t *ingressHop) answerStream(ctx context.Context, res *http.Response, body []byte) ([]byte, error) {
	events, err := hostproto.ParseEventStream(body, MaxBody)
	var i int
	if err == nil {
		i, err = hostproto.StreamReply(t.host, events, t.id)
	}
	if err != nil {
		_, _ = t.answerMessage(ctx, res, nil) // records a stated outcome; refuses the reply
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, err,
			"the application's event stream in reply to an accepted handoff is not usable: the delegate's status cannot be placed in it")
	}
	msg := events[i].Data()
	placed, err := t.answerMessage(ctx, res, msg)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(placed, msg) {
		return body, nil // a JSON-RPC error: no status in it, the stream as it came
	}
	return hostproto.ReplaceEventData(body, events[i], placed), nil
}

// eventStreamReply is, for the egress, the JSON-RPC response in an event stream that
// the status is read from: the one the ingress puts it in (hostproto.StreamReply).
func (o *egressOffer) eventStreamReply(body []byte) ([]byte, error) {
	events, err := hostproto.ParseEventStream(body, MaxBody)
	if err != nil {
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, err, "the event stream in reply to the handoff offer is not usable")
	}
	i, err := hostproto.StreamReply(o.rh.host, events, hostproto.RequestID(o.body))
	if err != nil {
		return nil, err
	}
	return events[i].Data(), nil
}
