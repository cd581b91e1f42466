package dialoga2a_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
)

// skillMessage is a message asking for skill (hostproto.A2ASkillMetadataKey).
func skillMessage(skill string) *a2a.MessageSendParams {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "book a hotel in Lisbon"})
	m.Metadata = map[string]any{"skill": skill}
	return &a2a.MessageSendParams{Message: m}
}

// Issue 25 (receiver conditions) over the real a2a-go, client and server: the hotel's
// dialog.Receiver has a skill and method allow-list (authz.Rules). The planner's
// message/send asking for the allowed skill reaches the executor; one asking for
// another skill, one naming none, and a method not on the list (tasks/get) never do
// (the executor counts its runs), and a2a-go's client raises each refusal as the
// JSON-RPC error it is, carrying not_authorized; no HTTP error status comes back.
func TestIssue25_A2ASkillAllowList(t *testing.T) {
	w := newWorld(t)
	rules, err := authz.NewRules([]authz.Rule{{Name: "planner-books",
		Allow: `sender == "` + w.Planner.ID.String() + `" && protocol == "a2a" && operation == "message/send" && name == "book_hotel"`}})
	adaptertest.MustOK(t, err)
	url, s := w.serveHotel(t, booked, dialog.WithAuthorizer(rules))
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	rec := &adaptertest.Recorder{}
	c := w.client(t, url, dc, rec)
	ctx := context.Background()

	res, err := c.SendMessage(ctx, skillMessage("book_hotel"))
	adaptertest.MustOK(t, err)
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted || s.Count() != 1 {
		t.Fatalf("the allowed skill: %s, runs %d", jsonOf(res), s.Count())
	}

	_, err = c.SendMessage(ctx, skillMessage("cancel_booking"))
	wantSDKRefusal(t, err, rec, errcode.NotAuthorized)
	_, err = c.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "anything"})})
	wantSDKRefusal(t, err, rec, errcode.NotAuthorized)
	_, err = c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	wantSDKRefusal(t, err, rec, errcode.NotAuthorized)
	if n := s.Count(); n != 1 {
		t.Fatalf("the executor ran %d times, want once (only the allowed skill)", n)
	}
}
