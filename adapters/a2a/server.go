package dialoga2a

import (
	"context"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/problem"
)

type verifiedKey struct{}

// Handler serves h over a2a-go's JSON-RPC transport behind rc: every request is
// verified first, and refused, or answered for a refused handoff, without reaching
// a2a-go. Build rc with dialog.WithHandoffsIn(hr, hostproto.A2A03). What rc verified
// goes into the call's context (Verified), which a2a-go hands on to the executor; the
// request's header fields go into a2a-go's CallContext as its RequestMeta, so that
// a2asrv.ExtensionsFrom sees the extensions the client listed (a2a-go's JSON-RPC
// handler does not pass them itself).
//
// An A2A task belongs to the workload whose proof opened it: a request naming a task
// another workload opened (tasks/get, tasks/cancel, tasks/resubscribe, push configs, a
// message that continues it) is refused with a2a-go's "task not found"
// (errcode.SessionOwnerMismatch underneath), so that no workload reads, cancels or
// continues another's task. The owner is recorded before the task ID leaves the
// server.
func Handler(rc *dialog.Receiver, h a2asrv.RequestHandler) http.Handler {
	inner := a2asrv.NewJSONRPCHandler(ownTasks(h))
	return rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := dialog.FromRequest(r)
		if v == nil {
			problem.Write(w, errcode.New(errcode.MissingCredential, "the request did not pass the dialog receiver"))
			return
		}
		ctx := context.WithValue(r.Context(), verifiedKey{}, v)
		ctx, _ = a2asrv.WithCallContext(ctx, a2asrv.NewRequestMeta(r.Header))
		inner.ServeHTTP(w, r.WithContext(ctx))
	}))
}

// Verified returns what the receiver verified about the request a2a-go is serving (its
// sender, Dialog-Context, Txn-Token, the handoff decision in Verified.Handoff and a
// checked cancel in Verified.Cancel), or nil outside Handler. a2a-go runs an executor
// on a context detached from the request's cancellation that keeps its values, so it
// works in AgentExecutor.Execute and Cancel.
func Verified(ctx context.Context) *dialog.Verified {
	v, _ := ctx.Value(verifiedKey{}).(*dialog.Verified)
	return v
}

// Work is an A2A agent's own code for one message. It returns the agent's answer
// (nil for none), which becomes the status message of the completed task, or an
// error, which fails it. ctx ends when the task is canceled.
type Work func(ctx context.Context, reqCtx *a2asrv.RequestContext) (*a2a.Message, error)

// Executor is an a2asrv.AgentExecutor that runs Work as a task and carries the
// handoff lifecycle on it (section 4, Table 1, in the A2A 0.3 task states of a2a-go).
// For an accepted offer it takes the hop (hr.Accept) before the work and reports
// "working" with the signed "accepted" status, then the signed outcome in the final
// TaskStatus.message: "completed" when Work returns no error, else "failed", saying
// that the work took no effect (section 5.4). A request outside Handler is refused. A
// message without a handoff runs Work as it is, with no statuses.
//
// Cancel ends the task as "canceled" and so the context Work runs on. The delegator's
// "canceled" status in the tasks/cancel metadata was checked and recorded by the
// receiver before (Verified.Cancel); the hop then stays canceled and no outcome is
// signed for it. Work that can take part effect before it fails must not report that
// as an error here: sign its own status with hr.Fail and the effects.
type Executor struct {
	hr   *handoff.Receiver
	work Work
}

// NewExecutor returns the executor for work, with hr the receiver
// dialog.WithHandoffsIn was given.
func NewExecutor(hr *handoff.Receiver, work Work) *Executor {
	return &Executor{hr: hr, work: work}
}

var _ a2asrv.AgentExecutor = (*Executor)(nil)

// Execute implements a2asrv.AgentExecutor.
func (e *Executor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	v := Verified(ctx)
	if v == nil {
		return errcode.New(errcode.MissingCredential, "the message did not pass the dialog receiver")
	}
	if v.Handoff == nil || v.Handoff.Offer == nil {
		res, err := e.work(ctx, reqCtx)
		if ctx.Err() != nil {
			return nil // canceled: the canceled state is the task's end
		}
		state := a2a.TaskStateCompleted
		if err != nil {
			state, res = a2a.TaskStateFailed, nil
		}
		return writeFinal(ctx, q, reqCtx, state, reply(reqCtx, res), nil)
	}
	iss, hop := v.Handoff.Offer.Iss, v.Handoff.Offer.Hop
	accepted, err := e.hr.Accept(ctx, iss, hop)
	if err != nil {
		return err
	}
	working, _ := TaskState(handoff.StateAccepted)
	msg := reply(reqCtx, nil)
	if err := putStatus(msg, accepted); err != nil {
		return err
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, working, msg)); err != nil {
		return err
	}
	res, err := e.work(ctx, reqCtx)
	if ctx.Err() != nil {
		return nil // canceled: the receiver recorded the delegator's canceled status
	}
	var status handoff.Signed
	var state a2a.TaskState
	if err == nil {
		state, _ = TaskState(handoff.StateCompleted)
		status, err = e.hr.Complete(ctx, iss, hop, nil)
	} else {
		state, _ = TaskState(handoff.StateFailed)
		res = nil // the work's error stays here
		status, err = e.hr.Fail(ctx, iss, hop, handoff.Failure{Detail: "the agent's work failed"})
	}
	if err != nil {
		return err
	}
	return writeFinal(ctx, q, reqCtx, state, reply(reqCtx, res), &status)
}

// Cancel implements a2asrv.AgentExecutor: the task ends as canceled.
func (e *Executor) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	if Verified(ctx) == nil {
		return errcode.New(errcode.MissingCredential, "the cancel did not pass the dialog receiver")
	}
	return writeFinal(ctx, q, reqCtx, a2a.TaskStateCanceled, nil, nil)
}

// reply is the agent's status message for the task: res placed in it, or a message
// with no parts.
func reply(reqCtx *a2asrv.RequestContext, res *a2a.Message) *a2a.Message {
	if res == nil {
		res = a2a.NewMessageForTask(a2a.MessageRoleAgent, reqCtx)
	}
	res.TaskID, res.ContextID = reqCtx.TaskID, reqCtx.ContextID
	if res.ID == "" {
		res.ID = a2a.NewMessageID()
	}
	if res.Role == "" {
		res.Role = a2a.MessageRoleAgent
	}
	if res.Parts == nil {
		res.Parts = a2a.ContentParts{}
	}
	return res
}

func putStatus(m *a2a.Message, s handoff.Signed) error {
	meta, err := handoff.PutStatusMeta(m.Metadata, handoff.A2AExtensionURI, s)
	if err != nil {
		return err
	}
	m.Metadata = meta
	m.Extensions = appendOnce(m.Extensions, handoff.A2AExtensionURI)
	return nil
}

func writeFinal(ctx context.Context, q eventqueue.Queue, reqCtx *a2asrv.RequestContext, state a2a.TaskState, msg *a2a.Message, s *handoff.Signed) error {
	if s != nil {
		if err := putStatus(msg, *s); err != nil {
			return err
		}
	}
	ev := a2a.NewStatusUpdateEvent(reqCtx, state, msg)
	ev.Final = true
	return q.Write(ctx, ev)
}

// TaskState is Table 1 (section 4) in a2a-go's task states (A2A 0.3): the task state
// that reports a hop state; ok is false for a state with no entry (offered, expired).
func TaskState(s handoff.State) (a2a.TaskState, bool) {
	t, ok := handoff.A2A03TaskState(s)
	return a2a.TaskState(t), ok
}

// HopState is Table 1 read the other way: the hop state nearest to an a2a-go task
// state. input-required and auth-required stay in A2A and change no hop: ok is false.
func HopState(t a2a.TaskState) (handoff.State, bool) {
	return handoff.StateForA2ATask(string(t))
}
