package authz_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()
	allow := authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		return authz.Decision{Allow: true, Rule: "r"}, nil
	})
	deny := authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		return authz.Decision{Rule: "r", Reason: "secret reason"}, nil
	})
	broken := authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		return authz.Decision{Allow: true}, errors.New("pdp down")
	})
	if d, err := authz.Check(ctx, allow, &authz.Request{}); err != nil || d.Rule != "r" {
		t.Fatalf("allow: %v %v", d, err)
	}
	d, err := authz.Check(ctx, deny, &authz.Request{})
	if errcode.CodeOf(err) != errcode.NotAuthorized || errcode.KindOf(err) != errcode.Failed || problem.Status(err) != 403 {
		t.Fatalf("deny: %v", err)
	}
	if d.Reason != "secret reason" {
		t.Fatalf("the decision is returned for the log: %+v", d)
	}
	if p := problem.From(err); p.Detail == "secret reason" {
		t.Fatal("the reason must not be sent")
	}
	// An error refuses even when the decider also said allow: fail closed.
	_, err = authz.Check(ctx, broken, &authz.Request{})
	if errcode.CodeOf(err) != errcode.DecisionUnavailable || errcode.KindOf(err) != errcode.Incomplete || problem.Status(err) != 503 {
		t.Fatalf("unavailable: %v", err)
	}
}
