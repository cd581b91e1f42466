package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
)

// ingressHop is the hop of an accepted offer the ingress took for the application.
type ingressHop struct {
	hr       *handoff.Receiver
	iss, hop string
	host     hostproto.Host
	id       json.RawMessage // the request's JSON-RPC id: its response in an event stream gets the status
	accepted handoff.Signed
}

// takeHop takes the hop of the offer the receiver accepted (handoff.Receiver.Accept,
// section 4), before the application runs, as the Go adapters do: from then on the
// delegate keeps the hop until its outcome is sent (section 5.2), and a retransmission
// is answered with the last status (section 5.3) by the receiver.
func (in *Ingress) takeHop(ctx context.Context, v *dialog.Verified, body []byte) (*ingressHop, error) {
	if in.handoffs == nil {
		return nil, errcode.New(errcode.Internal, "the ingress has no handoff receiver (IngressConfig.Handoffs) to take an accepted offer with")
	}
	o := v.Handoff.Offer
	env, _ := hostproto.ParseRequest(body) // the receiver read the offer in it
	st, err := in.handoffs.Accept(ctx, o.Iss, o.Hop)
	if err != nil {
		return nil, err
	}
	return &ingressHop{hr: in.handoffs, iss: o.Iss, hop: o.Hop, host: hostproto.HostOf(env.Method), id: env.ID, accepted: st}, nil
}

// answer puts the delegate's status in the application's reply: an application/json
// reply (answerMessage) or the response event of an event stream (answerStream).
func (t *ingressHop) answer(ctx context.Context, res *http.Response, body []byte) ([]byte, error) {
	if res.StatusCode/100 == 2 && hostproto.IsEventStream(res.Header) {
		return t.answerStream(ctx, res, body)
	}
	return t.answerMessage(ctx, res, body)
}

// answerMessage makes the delegate's status from the application's response and puts
// it in the reply where the host protocol carries it (section 6). The application
// states the outcome in HandoffStatusField ("completed", "failed" with
// HandoffReasonField, or "accepted"); without it, an A2A Task's state gives it (Table
// 1) and anything else leaves the hop "accepted". The status is recorded before the reply is written, so
// that a retransmission gets it even when this reply is lost. A reply that is a
// refusal or a JSON-RPC error goes out as it is (section 6 places statuses in results
// only); a successful reply in which the status cannot be placed is refused: no
// unsigned success goes out.
func (t *ingressHop) answerMessage(ctx context.Context, res *http.Response, body []byte) ([]byte, error) {
	stated := res.Header.Values(HandoffStatusField)
	reason := res.Header.Get(HandoffReasonField)
	res.Header.Del(HandoffStatusField)
	res.Header.Del(HandoffReasonField)
	// The outcome is recorded even when the caller has gone.
	ctx = context.WithoutCancel(ctx)

	var env map[string]json.RawMessage
	_ = json.Unmarshal(body, &env)
	result, hasResult := env["result"]
	if string(result) == "null" {
		hasResult = false
	}
	_, isError := env["error"]
	ok := res.StatusCode/100 == 2
	placeable := ok && hasResult
	// A success that is not a JSON-RPC response (nor an event stream with one: see
	// answerStream) cannot carry the status. Without an outcome to record, it is
	// refused before anything is signed.
	unplaceable := ok && !hasResult && !isError
	if unplaceable && len(stated) == 0 {
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, nil,
			"the application's reply to an accepted handoff is not a JSON-RPC response (in application/json or an event stream): the delegate's status cannot be placed in it")
	}

	var st handoff.Signed
	var err error
	switch {
	case len(stated) > 1:
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, nil, "the application sent %s more than once", HandoffStatusField)
	case len(stated) == 1:
		st, err = t.stated(ctx, strings.TrimSpace(stated[0]), reason)
	case placeable && t.host != hostproto.MCP:
		st, err = t.fromTask(ctx, result)
	default:
		st = t.accepted
	}
	if err != nil {
		return nil, err
	}
	if unplaceable {
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, nil,
			"the application's reply to an accepted handoff is not a JSON-RPC response (in application/json or an event stream): the delegate's status is recorded but cannot be placed in it")
	}
	if !placeable {
		return body, nil // a refusal or a JSON-RPC error: the status is recorded, for a retransmission
	}
	placed, err := hostproto.PlaceStatus(t.host, result, st)
	if err != nil {
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, err, "the delegate's status cannot be placed in the application's reply")
	}
	return hostproto.SetMember(env, "result", placed, "reply")
}

// stated signs the outcome the application stated.
func (t *ingressHop) stated(ctx context.Context, state, reason string) (handoff.Signed, error) {
	switch handoff.State(state) {
	case handoff.StateAccepted:
		return t.accepted, nil
	case handoff.StateCompleted:
		return t.hr.Complete(ctx, t.iss, t.hop, nil)
	case handoff.StateFailed:
		return t.hr.Fail(ctx, t.iss, t.hop, failure(reason, ""))
	}
	return handoff.Signed{}, errcode.Unavailable(errcode.UpstreamUnavailable, nil,
		"the application's %s %q is not completed, failed or accepted", HandoffStatusField, errcode.Cut(state))
}

// failure reads the application's HandoffReasonField: one of section 2's reason values
// is the status's reason, any other text its detail (percent-decoded, bounded).
func failure(reason, fallback string) handoff.Failure {
	if r, err := url.PathUnescape(reason); err == nil {
		reason = r
	}
	reason = strings.ToValidUTF8(strings.TrimSpace(reason), "\uFFFD")
	if len(reason) > MaxHandoffReason {
		i := MaxHandoffReason
		for i > 0 && !utf8.RuneStart(reason[i]) {
			i--
		}
		reason = reason[:i]
	}
	r := handoff.Reason(reason)
	if r.Listed() && r != handoff.ReasonStale && r != handoff.ReasonReplay {
		return handoff.Failure{Reason: r}
	}
	if reason == "" {
		reason = fallback
	}
	return handoff.Failure{Detail: reason}
}

// fromTask derives the status from the state of an A2A Task the application returned
// (Table 1), or from the state of a streamed status update (hostproto.A2ATask): completed and
// failed are the outcome. The ingress took the hop before the
// application ran, and section 4 forbids "rejected" for a taken hop: a rejected task
// is "failed" with reason "policy" and no refs (the work took no effect). A canceled
// task, a task still working or waiting for input, and a Message leave the hop
// "accepted": the delegate cannot send "canceled" (the delegator's state), and section
// 5.4 keeps a hop whose outcome is not known "accepted".
func (t *ingressHop) fromTask(ctx context.Context, result json.RawMessage) (handoff.Signed, error) {
	task, _ := hostproto.A2ATask(t.host, result)
	if task == nil {
		return t.accepted, nil
	}
	state, _ := handoff.StateForA2ATask(hostproto.TaskState(task))
	switch state {
	case handoff.StateCompleted:
		return t.hr.Complete(ctx, t.iss, t.hop, nil)
	case handoff.StateFailed:
		return t.hr.Fail(ctx, t.iss, t.hop, handoff.Failure{Detail: "the task failed"})
	case handoff.StateRejected:
		return t.hr.Fail(ctx, t.iss, t.hop, handoff.Failure{Reason: handoff.ReasonPolicy, Detail: "the application rejected the task"})
	}
	return t.accepted, nil
}
