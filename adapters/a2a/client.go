package dialoga2a

import (
	"context"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
)

// ClientOptions returns the a2aclient factory options that make an a2a-go client
// speak in the dialog: the JSON-RPC transport over an *http.Client built on
// agent.Transport (every request proved, Dialog-Context and Txn-Token attached, signed
// responses verified) and the Interceptor, which, with c.Delegator, adds its "canceled"
// status to the metadata of a tasks/cancel for a task one of its offers opened. Pass them to a2aclient.NewFromCard or
// NewFromEndpoints.
func ClientOptions(c agent.HostClientConfig) ([]a2aclient.FactoryOption, error) {
	hc, err := NewHTTPClient(c)
	if err != nil {
		return nil, err
	}
	return []a2aclient.FactoryOption{
		a2aclient.WithJSONRPCTransport(hc),
		a2aclient.WithInterceptors(NewInterceptor(c.Delegator)),
	}, nil
}

// NewHTTPClient returns the *http.Client for a2aclient.WithJSONRPCTransport: every
// request goes through c.Transport, in c.Dialog.
func NewHTTPClient(c agent.HostClientConfig) (*http.Client, error) {
	if err := c.Check("A2A"); err != nil {
		return nil, err
	}
	return &http.Client{Transport: &roundTripper{cfg: c}}, nil
}

type roundTripper struct{ cfg agent.HostClientConfig }

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.cfg.Dialog == nil {
		return rt.cfg.Transport.RoundTrip(req)
	}
	return rt.cfg.Transport.RoundTrip(req.WithContext(rt.cfg.InDialog(req.Context())))
}

// Interceptor is an a2aclient.CallInterceptor for handoffs (section 6). It lists the
// extension URI on every call under both names of the service parameter, A2A-Extensions
// and X-A2A-Extensions (a2a-go 0.3 reads the second, A2A 1.0 servers the first). With a
// Delegator, it remembers which task an offer's message opened and, when the caller
// cancels that task, adds the delegator's "canceled" status for the hop to the
// metadata of the tasks/cancel params (the caller's *a2a.TaskIDParams is changed).
type Interceptor struct {
	delegator *handoff.Delegator
	hops      agent.OfferedHops[a2a.TaskID] // tasks an offer opened
}

// NewInterceptor returns the interceptor; d may be nil (no cancel statuses added).
func NewInterceptor(d *handoff.Delegator) *Interceptor {
	return &Interceptor{delegator: d}
}

var _ a2aclient.CallInterceptor = (*Interceptor)(nil)

type hopKey struct{}

// Before lists the extension, notes the hop of an offer a message carries, and adds
// the "canceled" status to the cancel of a task an offer opened.
func (ic *Interceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	for _, name := range []string{hostproto.A2AExtensionsHeader, hostproto.A2A03ExtensionsHeader} {
		req.Meta[name] = appendOnce(req.Meta[name], handoff.A2AExtensionURI)
	}
	if ic.delegator == nil {
		return ctx, nil
	}
	switch p := req.Payload.(type) {
	case *a2a.MessageSendParams:
		if p == nil || p.Message == nil {
			return ctx, nil
		}
		h, err := handoff.HandoffInMeta(p.Message.Metadata, handoff.A2AExtensionURI)
		if err != nil || h == nil {
			return ctx, nil // the receiver refuses what is malformed
		}
		o, err := handoff.DecodeOffer(h.Offer)
		if err != nil {
			return ctx, nil
		}
		if p.Message.TaskID != "" {
			ic.hops.Remember(p.Message.TaskID, o.Hop)
		}
		return context.WithValue(ctx, hopKey{}, o.Hop), nil
	case *a2a.TaskIDParams:
		if p == nil || req.Method != "CancelTask" {
			return ctx, nil
		}
		hop := ic.hops.Take(p.ID)
		if hop == "" {
			return ctx, nil
		}
		if s, err := handoff.StatusInMeta(p.Metadata, handoff.A2AExtensionURI); err != nil || s != nil {
			return ctx, nil // the caller placed one itself
		}
		canceled, err := ic.delegator.Cancel(ctx, hop)
		if err != nil {
			// A hop already resolved cannot be canceled: the cancel goes as the caller
			// made it, and the work it asks to stop has ended anyway.
			return ctx, nil
		}
		return ctx, PutCancel(p, canceled)
	}
	return ctx, nil
}

// After remembers the task a message with an offer opened (the reply to message/send,
// or each event of message/stream), for its cancel, and forgets it once it ended.
func (ic *Interceptor) After(ctx context.Context, resp *a2aclient.Response) error {
	hop, _ := ctx.Value(hopKey{}).(string)
	if hop == "" || resp.Err != nil {
		return nil
	}
	ev, ok := resp.Payload.(a2a.Event)
	if !ok || ev == nil {
		return nil
	}
	id := ev.TaskInfo().TaskID
	if id == "" {
		return nil
	}
	switch e := ev.(type) {
	case *a2a.Task:
		if e.Status.State.Terminal() {
			ic.hops.Take(id)
			return nil
		}
	case *a2a.TaskStatusUpdateEvent:
		if e.Final || e.Status.State.Terminal() {
			ic.hops.Take(id)
			return nil
		}
	}
	ic.hops.Remember(id, hop)
	return nil
}

func appendOnce(vals []string, v string) []string {
	for _, x := range vals {
		if x == v {
			return vals
		}
	}
	return append(vals, v)
}

// PutOffer places h in an A2A message: under handoff.A2AExtensionURI in its metadata,
// as JSON-native values (a2a-go's task store refuses others), with the URI listed in
// its extensions (section 6). Other members of the metadata are kept.
func PutOffer(m *a2a.Message, h *handoff.Handoff) error {
	meta, err := handoff.PutHandoffMeta(m.Metadata, handoff.A2AExtensionURI, h)
	if err != nil {
		return err
	}
	m.Metadata = meta
	m.Extensions = appendOnce(m.Extensions, handoff.A2AExtensionURI)
	return nil
}

// ReplyStatus reads the delegate's signed status from the result of message/send: the
// metadata of a Message, or of a Task's status message (TaskStatus.message); (nil,
// nil) when there is none. It is not verified here: hand it to
// handoff.Delegator.HandleStatus.
func ReplyStatus(r a2a.SendMessageResult) (*handoff.Signed, error) {
	switch v := r.(type) {
	case *a2a.Message:
		if v != nil {
			return handoff.StatusInMeta(v.Metadata, handoff.A2AExtensionURI)
		}
	case *a2a.Task:
		return TaskStatus(v)
	}
	return nil, nil
}

// TaskStatus reads the delegate's signed status from a Task's status message (the
// reply to message/send, tasks/get or tasks/cancel); (nil, nil) when there is none.
func TaskStatus(t *a2a.Task) (*handoff.Signed, error) {
	if t == nil || t.Status.Message == nil {
		return nil, nil
	}
	return handoff.StatusInMeta(t.Status.Message.Metadata, handoff.A2AExtensionURI)
}

// EventStatus reads the delegate's signed status from an event of message/stream (or
// tasks/resubscribe): a Message, a Task, or a TaskStatusUpdateEvent's status message;
// (nil, nil) when there is none.
func EventStatus(ev a2a.Event) (*handoff.Signed, error) {
	switch e := ev.(type) {
	case *a2a.Message:
		return ReplyStatus(e)
	case *a2a.Task:
		return TaskStatus(e)
	case *a2a.TaskStatusUpdateEvent:
		if e != nil && e.Status.Message != nil {
			return handoff.StatusInMeta(e.Status.Message.Metadata, handoff.A2AExtensionURI)
		}
	}
	return nil, nil
}

// PutCancel places the delegator's "canceled" status in the metadata of a
// tasks/cancel (section 6).
func PutCancel(p *a2a.TaskIDParams, s handoff.Signed) error {
	meta, err := handoff.PutStatusMeta(p.Metadata, handoff.A2AExtensionURI, s)
	if err != nil {
		return err
	}
	p.Metadata = meta
	return nil
}
