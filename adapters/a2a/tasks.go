package dialoga2a

import (
	"context"
	"iter"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// maxOwnedTasks bounds the tasks whose owner Handler remembers. A task past the bound
// is forgotten, and then refused to every workload (never left unguarded).
const maxOwnedTasks = 1 << 16

// ownedTasks is the RequestHandler Handler serves: an A2A task is used only by the
// workload whose proof opened it (errcode.SessionOwnerMismatch). a2a-go keeps tasks by
// task ID alone, so without this any workload the receiver lets in could read
// (tasks/get, tasks/resubscribe), cancel, continue or refer to (referenceTaskIds, which
// a2asrv.ReferencedTasksLoader loads for the executor) another's task. A task a request
// names that was not opened through this handler (or was forgotten) is refused as
// well. The refusal is a2a-go's "task not found", so that it does not tell another
// workload which task IDs exist.
type ownedTasks struct {
	a2asrv.RequestHandler
	mu    sync.Mutex
	owner map[a2a.TaskID]string
	order []a2a.TaskID
}

func ownTasks(h a2asrv.RequestHandler) *ownedTasks {
	return &ownedTasks{RequestHandler: h, owner: map[a2a.TaskID]string{}}
}

func (o *ownedTasks) check(ctx context.Context, id a2a.TaskID) error {
	v := Verified(ctx)
	if v == nil {
		return errcode.New(errcode.MissingCredential, "the request did not pass the dialog receiver")
	}
	o.mu.Lock()
	owner, ok := o.owner[id]
	o.mu.Unlock()
	if !ok || owner != v.Sender.String() {
		return errcode.Wrap(errcode.SessionOwnerMismatch, a2a.ErrTaskNotFound, "the A2A task was not opened by this workload")
	}
	return nil
}

// record makes the sender of ctx the owner of task id, before the id leaves the server.
func (o *ownedTasks) record(ctx context.Context, id a2a.TaskID) {
	v := Verified(ctx)
	if id == "" || v == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.owner[id]; ok {
		return
	}
	o.owner[id] = v.Sender.String()
	o.order = append(o.order, id)
	for len(o.order) > maxOwnedTasks {
		delete(o.owner, o.order[0])
		o.order = o.order[1:]
	}
}

// checkMessage refuses a message that continues, or refers to, a task its sender did
// not open.
func (o *ownedTasks) checkMessage(ctx context.Context, p *a2a.MessageSendParams) error {
	if p == nil || p.Message == nil {
		return nil // a2a-go refuses it
	}
	if p.Message.TaskID != "" {
		if err := o.check(ctx, p.Message.TaskID); err != nil {
			return err
		}
	}
	for _, id := range p.Message.ReferenceTasks {
		if err := o.check(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func (o *ownedTasks) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	if err := o.checkMessage(ctx, p); err != nil {
		return nil, err
	}
	res, err := o.RequestHandler.OnSendMessage(ctx, p)
	if err == nil && res != nil {
		o.record(ctx, res.TaskInfo().TaskID)
	}
	return res, err
}

func (o *ownedTasks) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	if err := o.checkMessage(ctx, p); err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	events := o.RequestHandler.OnSendMessageStream(ctx, p)
	return func(yield func(a2a.Event, error) bool) {
		for ev, err := range events {
			if ev != nil {
				o.record(ctx, ev.TaskInfo().TaskID)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (o *ownedTasks) OnGetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	if q == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.check(ctx, q.ID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnGetTask(ctx, q)
}

func (o *ownedTasks) OnCancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.check(ctx, p.ID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnCancelTask(ctx, p)
}

func (o *ownedTasks) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	if p == nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, a2a.ErrInvalidParams) }
	}
	if err := o.check(ctx, p.ID); err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return o.RequestHandler.OnResubscribeToTask(ctx, p)
}

func (o *ownedTasks) OnGetTaskPushConfig(ctx context.Context, p *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.check(ctx, p.TaskID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnGetTaskPushConfig(ctx, p)
}

func (o *ownedTasks) OnListTaskPushConfig(ctx context.Context, p *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.check(ctx, p.TaskID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnListTaskPushConfig(ctx, p)
}

func (o *ownedTasks) OnSetTaskPushConfig(ctx context.Context, p *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.check(ctx, p.TaskID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnSetTaskPushConfig(ctx, p)
}

func (o *ownedTasks) OnDeleteTaskPushConfig(ctx context.Context, p *a2a.DeleteTaskPushConfigParams) error {
	if p == nil {
		return a2a.ErrInvalidParams
	}
	if err := o.check(ctx, p.TaskID); err != nil {
		return err
	}
	return o.RequestHandler.OnDeleteTaskPushConfig(ctx, p)
}
