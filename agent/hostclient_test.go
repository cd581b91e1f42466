package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// A call's hop is taken once (a second cancel adds no status), and the memory is
// bounded: past MaxOfferedHops calls the oldest is forgotten, the newest kept.
func TestOfferedHopsTakeOnceAndBounded(t *testing.T) {
	var o OfferedHops[string]
	if hop := o.Take("none"); hop != "" {
		t.Fatalf("a call never remembered has hop %q", hop)
	}
	o.Remember("c1", "hop1")
	if hop := o.Take("c1"); hop != "hop1" {
		t.Fatalf("Take = %q", hop)
	}
	if hop := o.Take("c1"); hop != "" {
		t.Fatalf("taken twice: %q", hop)
	}
	for i := range MaxOfferedHops + 1 {
		o.Remember(fmt.Sprint("call", i), fmt.Sprint("hop", i))
	}
	if hop := o.Take("call0"); hop != "" {
		t.Fatalf("the oldest call was kept past the bound: %q", hop)
	}
	last := fmt.Sprint("call", MaxOfferedHops)
	if hop := o.Take(last); hop != fmt.Sprint("hop", MaxOfferedHops) {
		t.Fatalf("the newest call: %q", hop)
	}
}

// A host client without a Transport is refused (invalid_request, naming the
// protocol); InDialog attaches the configured dialog and only it.
func TestHostClientConfig(t *testing.T) {
	err := HostClientConfig{}.Check("MCP")
	if errcode.CodeOf(err) != errcode.InvalidRequest || err.Error() != "invalid_request: an MCP client needs an agent.Transport" {
		t.Fatalf("Check without a Transport: %q (code %q)", err, errcode.CodeOf(err))
	}
	if err := (HostClientConfig{Transport: &Transport{}}).Check("A2A"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got := (HostClientConfig{}).InDialog(ctx); got != ctx {
		t.Fatal("InDialog without a dialog changed the context")
	}
	dc, err := dialog.New(NewDialogID(), identifier.MustParse("wimse://a.example/agent/planner"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := (HostClientConfig{Dialog: dc}).InDialog(ctx).Value(dialogKey).(*dialog.Context); got != dc {
		t.Fatalf("InDialog attached %v", got)
	}
}
