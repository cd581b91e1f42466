package dialoga2a_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2asrv"

	dialoga2a "github.com/dialogtrust/dialogtrust/adapters/a2a"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
)

// serveHotel serves the hotel agent over a2a-go's real JSON-RPC handler behind the
// dialog receiver, with opts added to the receiver's. work is the agent's own code.
func (w *world) serveHotel(t *testing.T, work dialoga2a.Work, opts ...dialog.ReceiverOption) (string, *adaptertest.Seen) {
	t.Helper()
	s := &adaptertest.Seen{}
	exec := dialoga2a.NewExecutor(w.HandoffReceiver, func(ctx context.Context, rc *a2asrv.RequestContext) (*a2a.Message, error) {
		s.Call(dialoga2a.Verified(ctx))
		return work(ctx, rc)
	})
	url := adaptertest.Serve(t, s, "/a2a", func(url string) http.Handler {
		return dialoga2a.Handler(w.Receiver(t, url, opts...), a2asrv.NewHandler(exec))
	})
	return url, s
}

func booked(_ context.Context, rc *a2asrv.RequestContext) (*a2a.Message, error) {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: "booked"}), nil
}

// openHotel serves the hotel with work and connects the planner to it in a new dialog,
// its requests seen by rec; it returns the hotel's URL, what the executor saw, the
// dialog and the client.
func (w *world) openHotel(t *testing.T, work dialoga2a.Work, rec *adaptertest.Recorder) (string, *adaptertest.Seen, *dialog.Context, *a2aclient.Client) {
	t.Helper()
	url, s := w.serveHotel(t, work)
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	return url, s, dc, w.client(t, url, dc, rec)
}

// offerMessage signs an offer to the hotel in dc, bound to the Txn-Token the request
// carries (section 5.7), and returns the message and the context to send it with.
func (w *world) offerMessage(t *testing.T, dc *dialog.Context) (*a2a.Message, *handoff.Handoff, context.Context) {
	t.Helper()
	h, ctx := w.Offer(t, dc)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "book a hotel in Lisbon"})
	m.ContextID = dc.DLG()
	adaptertest.MustOK(t, dialoga2a.PutOffer(m, h))
	return m, h, ctx
}

// Section 6 (A2A) over the real a2a-go: an offer in message/send is verified, taken
// and completed; the task ends "completed" (Table 1) with the signed "completed" status
// in TaskStatus.message; every request was proved, carried the Dialog-Context and a
// Txn-Token and listed the extension under both names; the executor saw what the
// receiver verified, and a2a-go's CallContext the extension the client listed.
func TestA2ASec6_OfferAcceptedAndCompleted(t *testing.T) {
	w := newWorld(t)
	var requested []string
	_, s, dc, c := w.openHotel(t, func(ctx context.Context, rc *a2asrv.RequestContext) (*a2a.Message, error) {
		if ext, ok := a2asrv.ExtensionsFrom(ctx); ok {
			requested = ext.RequestedURIs()
		}
		return booked(ctx, rc)
	}, &adaptertest.Recorder{})
	m, h, ctx := w.offerMessage(t, dc)
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m})
	task := wantTask(t, res, err, a2a.TaskStateCompleted)
	if task.Status.Message == nil || len(task.Status.Message.Parts) != 1 {
		t.Fatalf("the agent's answer is not the status message: %s", jsonOf(task.Status))
	}
	st, err := dialoga2a.ReplyStatus(res)
	if err != nil || st == nil {
		t.Fatalf("no status in the reply (%v): %s", err, jsonOf(res))
	}
	u := w.WantCompleted(t, *st)
	if hs, ok := dialoga2a.HopState(task.Status.State); !ok || hs != u.Status.State {
		t.Fatalf("Table 1: task state %s is hop state %s, the status says %s", task.Status.State, hs, u.Status.State)
	}
	requests := w.WantOfferTaken(t, s, dc, h)
	if !slices.Contains(requested, handoff.A2AExtensionURI) {
		t.Fatalf("a2a-go's CallContext lists the extensions %q", requested)
	}
	if len(requests) != 1 {
		t.Fatalf("%d HTTP requests seen", len(requests))
	}
	for i, hd := range requests {
		for _, name := range []string{hostproto.A2AExtensionsHeader, hostproto.A2A03ExtensionsHeader} {
			if !slices.Contains(hd.Values(name), handoff.A2AExtensionURI) {
				t.Fatalf("A2A request %d does not list the extension in %s: %v", i, name, hd)
			}
		}
	}
	rec, err := w.HandoffReceiver.Lookup(context.Background(), w.Planner.ID.String(), u.Hop.Hop)
	adaptertest.MustOK(t, err)
	if handoff.State(rec.State) != handoff.StateCompleted {
		t.Fatalf("the hop is %q at the delegate", rec.State)
	}
}

// Section 5.3 over a2a-go: the delegator sends the same offer again and gets the
// identical octets of the last status in a reply Message, answered from the records
// without the executor; the same offer from another workload gets no status (8.4).
func TestA2ASec5_3_RetransmissionGetsIdenticalStatus(t *testing.T) {
	w := newWorld(t)
	url, s, dc, c := w.openHotel(t, booked, &adaptertest.Recorder{})
	m, h, ctx := w.offerMessage(t, dc)
	first, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m})
	adaptertest.MustOK(t, err)
	st1, err := dialoga2a.ReplyStatus(first)
	if err != nil || st1 == nil {
		t.Fatalf("first status: %v", err)
	}
	again := w.Retransmission(t, h)
	m2 := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "book a hotel in Lisbon"})
	m2.ContextID = dc.DLG()
	adaptertest.MustOK(t, dialoga2a.PutOffer(m2, again))
	second, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m2})
	adaptertest.MustOK(t, err)
	if _, ok := second.(*a2a.Message); !ok {
		t.Fatalf("the retransmission was answered with %s, want a Message", jsonOf(second))
	}
	st2, err := dialoga2a.ReplyStatus(second)
	if err != nil || st2 == nil {
		t.Fatalf("no status for the retransmission (%v): %s", err, jsonOf(second))
	}
	if !st2.Equal(*st1) {
		t.Fatal("the retransmission got other octets than the last status")
	}
	s.WantRuns(t, 1)

	other := w.Dom.Workload("/agent/other")
	rec := &adaptertest.Recorder{}
	c2 := w.clientAs(t, other.Source, nil, url, dc, rec)
	res, err := c2.SendMessage(context.Background(), &a2a.MessageSendParams{Message: m2})
	if err == nil {
		if st, _ := dialoga2a.ReplyStatus(res); st != nil {
			t.Fatal("the last status was resent to a workload that is not offer.iss")
		}
		t.Fatalf("the retransmission from another workload was answered: %s", jsonOf(res))
	}
	wantSDKRefusal(t, err, rec, errcode.HandoffRetransmission)
	s.WantRuns(t, 1)
}

// Section 6: the delegator cancels the task an offer opened; tasks/cancel carries its
// "canceled" status in the params' metadata (added by the interceptor), the receiver
// checks and records it, and a2a-go's cancel ends the context the work runs on.
func TestA2ASec6_CancelStopsTheWork(t *testing.T) {
	w := newWorld(t)
	work := adaptertest.NewBlocking()
	_, _, dc, c := w.openHotel(t, func(ctx context.Context, rc *a2asrv.RequestContext) (*a2a.Message, error) {
		return nil, work.Run(ctx)
	}, &adaptertest.Recorder{})
	m, h, ctx := w.offerMessage(t, dc)
	blocking := false
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m, Config: &a2a.MessageSendConfig{Blocking: &blocking}})
	task := wantTask(t, res, err, a2a.TaskStateWorking)
	if st, err := dialoga2a.TaskStatus(task); err != nil || st == nil {
		t.Fatalf("the working task carries no accepted status (%v)", err)
	} else if u, err := w.Delegator.HandleStatus(context.Background(), *st); err != nil || u.Status.State != handoff.StateAccepted {
		t.Fatalf("accepted status: %v %+v", err, u)
	}
	<-work.Started
	params := &a2a.TaskIDParams{ID: task.ID}
	canceled, err := c.CancelTask(ctx, params)
	adaptertest.MustOK(t, err)
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("the task is %s after the cancel", canceled.Status.State)
	}
	if st, err := handoff.StatusInMeta(params.Metadata, handoff.A2AExtensionURI); err != nil || st == nil {
		t.Fatalf("tasks/cancel went without the canceled status (%v)", err)
	}
	work.WantCanceled(t)
	w.WantCanceledAtBothEnds(t, h)
}

// Section 5.1 step 5: a message whose A2A contextId is not the dlg of its
// Dialog-Context is refused (handoff_policy) and the executor never runs.
func TestA2ASec5_1_WrongContextIDRefused(t *testing.T) {
	w := newWorld(t)
	rec := &adaptertest.Recorder{}
	_, s, dc, c := w.openHotel(t, booked, rec)
	m, _, ctx := w.offerMessage(t, dc)
	m.ContextID = adaptertest.NewDialog(t, w.Planner.ID).DLG()
	wantMessageRefused(t, c, ctx, m, rec, s, errcode.HandoffPolicy, "a message with another contextId")
}

// Section 6: a handoff where an A2A 0.3 receiver does not read one (here under the MCP
// key in the message metadata) is refused with handoff_unplaced, never let through
// unchecked, and the executor never runs.
func TestA2ASec6_UnplacedHandoffRefused(t *testing.T) {
	w := newWorld(t)
	rec := &adaptertest.Recorder{}
	_, s, dc, c := w.openHotel(t, booked, rec)
	h, ctx := w.Offer(t, dc)
	v, err := h.MetaValue()
	adaptertest.MustOK(t, err)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "book"})
	m.Metadata = map[string]any{handoff.MCPMetaKey: v}
	wantMessageRefused(t, c, ctx, m, rec, s, errcode.HandoffUnplaced, "a message with an unplaced handoff")
}

// Dialog-binding section 7 over a2a-go: a Dialog-Context changed after the request was
// signed is refused, and the executor never runs.
func TestA2ASec7_TamperedDialogContextRefused(t *testing.T) {
	w := newWorld(t)
	url, s := w.serveHotel(t, booked)
	dc, rec := w.TamperedDialog(t)
	c := w.client(t, url, dc, rec)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "book"})
	if res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: m}); err == nil {
		t.Fatalf("a message with a tampered Dialog-Context was answered: %s", jsonOf(res))
	}
	adaptertest.WantRefusedBeforeWork(t, rec, s)
}

// Table 1 in a2a-go's task states: every sendable hop state has a task state, read
// back as the same hop state; input-required and auth-required change no hop.
func TestA2ATable1_TaskStates(t *testing.T) {
	for s, want := range map[handoff.State]a2a.TaskState{
		handoff.StateAccepted:  a2a.TaskStateWorking,
		handoff.StateRejected:  a2a.TaskStateRejected,
		handoff.StateCompleted: a2a.TaskStateCompleted,
		handoff.StateFailed:    a2a.TaskStateFailed,
		handoff.StateCanceled:  a2a.TaskStateCanceled,
	} {
		got, ok := dialoga2a.TaskState(s)
		if !ok || got != want {
			t.Errorf("TaskState(%s) = %q, %v; want %q", s, got, ok, want)
		}
		if back, ok := dialoga2a.HopState(got); !ok || back != s {
			t.Errorf("HopState(%s) = %s, %v; want %s", got, back, ok, s)
		}
	}
	for _, ts := range []a2a.TaskState{a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired} {
		if s, ok := dialoga2a.HopState(ts); ok {
			t.Errorf("HopState(%s) = %s, want none", ts, s)
		}
	}
}

// Section 5.4 over a2a-go: work that ends in an error fails the task, with the signed
// "failed" status (no effect) in TaskStatus.message and not the work's error.
func TestA2ASec5_4_FailedWorkFailsTheTask(t *testing.T) {
	w := newWorld(t)
	_, _, dc, c := w.openHotel(t, func(context.Context, *a2asrv.RequestContext) (*a2a.Message, error) {
		return nil, errors.New("no rooms: internal detail")
	}, &adaptertest.Recorder{})
	m, _, ctx := w.offerMessage(t, dc)
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m})
	task := wantTask(t, res, err, a2a.TaskStateFailed)
	if got := jsonOf(task); strings.Contains(got, "internal detail") {
		t.Fatalf("the work's error left the agent: %s", got)
	}
	st, err := dialoga2a.ReplyStatus(res)
	if err != nil || st == nil {
		t.Fatalf("no status in the failed task (%v)", err)
	}
	u, err := w.Delegator.HandleStatus(context.Background(), *st)
	adaptertest.MustOK(t, err)
	if u.Status.State != handoff.StateFailed {
		t.Fatalf("status %s, want failed", u.Status.State)
	}
}

// A message without a handoff runs the work as it is, in the verified dialog, and its
// task carries no status.
func TestA2AMessageWithoutHandoff(t *testing.T) {
	w := newWorld(t)
	_, s, dc, c := w.openHotel(t, booked, &adaptertest.Recorder{})
	res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hello"})})
	wantTask(t, res, err, a2a.TaskStateCompleted)
	if st, err := dialoga2a.ReplyStatus(res); err != nil || st != nil {
		t.Fatalf("a status without a handoff: %v %v", st, err)
	}
	_, calls := s.Snapshot()
	if len(calls) != 1 || calls[0] == nil || calls[0].Context == nil || calls[0].Context.DLG() != dc.DLG() || calls[0].Handoff != nil {
		t.Fatalf("the executor saw %+v", calls)
	}
}

// An A2A task belongs to the workload that opened it: another workload of the same
// trust domain that names its task ID (tasks/get, tasks/cancel, a message continuing
// or referring to it) is told the task does not exist, and the work goes on; the
// owner's own requests work.
func TestA2ATaskOwnedByItsWorkload(t *testing.T) {
	w := newWorld(t)
	started, stopped := make(chan struct{}), make(chan error, 1)
	url, s, dc, c := w.openHotel(t, func(ctx context.Context, rc *a2asrv.RequestContext) (*a2a.Message, error) {
		if rc.StoredTask != nil {
			return booked(ctx, rc)
		}
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}, &adaptertest.Recorder{})
	m, _, ctx := w.offerMessage(t, dc)
	blocking := false
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m, Config: &a2a.MessageSendConfig{Blocking: &blocking}})
	adaptertest.MustOK(t, err)
	task := res.(*a2a.Task)
	<-started

	other := w.Dom.Workload("/agent/other")
	c2 := w.clientAs(t, other.Source, nil, url, dc, &adaptertest.Recorder{})
	if got, err := c2.GetTask(context.Background(), &a2a.TaskQueryParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("another workload read the task: %v %s", err, jsonOf(got))
	}
	if got, err := c2.CancelTask(context.Background(), &a2a.TaskIDParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("another workload canceled the task: %v %s", err, jsonOf(got))
	}
	cont := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "and breakfast"})
	cont.TaskID = task.ID
	if got, err := c2.SendMessage(context.Background(), &a2a.MessageSendParams{Message: cont}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("another workload continued the task: %v %s", err, jsonOf(got))
	}
	ref := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "the same as that one"})
	ref.ReferenceTasks = []a2a.TaskID{task.ID}
	if got, err := c2.SendMessage(context.Background(), &a2a.MessageSendParams{Message: ref}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("another workload referred to the task: %v %s", err, jsonOf(got))
	}
	select {
	case err := <-stopped:
		t.Fatalf("the work stopped: %v", err)
	default:
	}
	s.WantRuns(t, 1)
	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	adaptertest.MustOK(t, err)
	if got.Status.State != a2a.TaskStateWorking {
		t.Fatalf("the owner sees the task %s", got.Status.State)
	}
	if _, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID}); err != nil {
		t.Fatalf("the owner's cancel: %v", err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the owner's cancel did not stop the work: %v", err)
	}
}

// Section 6 over message/stream: the events carry the signed "accepted" status with
// "working", then "completed" in the final event (Table 1).
func TestA2ASec6_StreamCarriesStatuses(t *testing.T) {
	w := newWorld(t)
	_, _, dc, c := w.openHotel(t, booked, &adaptertest.Recorder{})
	m, _, ctx := w.offerMessage(t, dc)
	var states []handoff.State
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: m}) {
		adaptertest.MustOK(t, err)
		st, err := dialoga2a.EventStatus(ev)
		adaptertest.MustOK(t, err)
		if st == nil {
			continue
		}
		u, err := w.Delegator.HandleStatus(context.Background(), *st)
		adaptertest.MustOK(t, err)
		if e, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			if hs, ok := dialoga2a.HopState(e.Status.State); !ok || hs != u.Status.State {
				t.Fatalf("Table 1: task state %s with the status %s", e.Status.State, u.Status.State)
			}
		}
		states = append(states, u.Status.State)
	}
	if !slices.Equal(states, []handoff.State{handoff.StateAccepted, handoff.StateCompleted}) {
		t.Fatalf("the stream carried the statuses %v", states)
	}
}

// wantTask wants the reply to a message to be a task in state, and returns it.
func wantTask(t *testing.T, res a2a.SendMessageResult, err error, state a2a.TaskState) *a2a.Task {
	t.Helper()
	adaptertest.MustOK(t, err)
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != state {
		t.Fatalf("reply %s, want a %s task", jsonOf(res), state)
	}
	return task
}

// wantMessageRefused sends m in ctx and wants it refused with code (wantSDKRefusal)
// before the executor ran; what names the message in the failure.
func wantMessageRefused(t *testing.T, c *a2aclient.Client, ctx context.Context, m *a2a.Message, rec *adaptertest.Recorder, s *adaptertest.Seen, code errcode.Code, what string) {
	t.Helper()
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m})
	if err == nil {
		t.Fatalf("%s was answered: %s", what, jsonOf(res))
	}
	wantSDKRefusal(t, err, rec, code)
	s.WantRuns(t, 0)
}

// wantSDKRefusal checks that a2a-go surfaces a refusal at the handoff step as the
// JSON-RPC error it is: a2a.ErrInvalidParams (-32602), with the stable code leading the
// text it keeps of the error's data, and that no HTTP error status came back (a2a-go
// reports a 4xx as "unexpected HTTP status" and drops its body).
func wantSDKRefusal(t *testing.T, err error, rec *adaptertest.Recorder, code errcode.Code) {
	t.Helper()
	if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), string(code)+": ") {
		t.Fatalf("the SDK error %v does not name %s as invalid params", err, code)
	}
	rec.WantNoHTTPError(t)
}
