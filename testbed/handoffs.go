package testbed

import (
	"errors"
	"fmt"
	"io"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Handoffs are the handoff keys of a delegating agent and its delegate, bound to their
// AgentIds (the workload identifiers) in one trust, and the delegating agent's
// Delegator (handoff-context sections 4 and 5).
type Handoffs struct {
	Trust        *handoff.StaticTrust
	Delegator    *handoff.Delegator
	DelegatorKey *keys.PrivateKey // signs the delegating agent's offers
	DelegateKey  *keys.PrivateKey // signs the delegate's statuses
}

// NewHandoffs generates the two keys (ES256) and binds them.
func NewHandoffs(delegator, delegate identifier.ID) (*Handoffs, error) {
	dk, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	ek, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	h := &Handoffs{Trust: handoff.NewStaticTrust(), DelegatorKey: dk, DelegateKey: ek}
	if err := errors.Join(h.Trust.Bind(delegator.String(), dk.Public()), h.Trust.Bind(delegate.String(), ek.Public())); err != nil {
		return nil, err
	}
	if h.Delegator, err = handoff.NewDelegator(handoff.DelegatorConfig{Self: delegator.String(), Key: dk, Trust: h.Trust}); err != nil {
		return nil, err
	}
	return h, nil
}

// WriteError writes an example's failure to w (its standard error): the stable error
// code and the detail for an *errcode.Error, else the error after the example's name.
func WriteError(w io.Writer, name string, err error) {
	var ce *errcode.Error
	if errors.As(err, &ce) {
		fmt.Fprintf(w, "error: %s\ndetail: %s\n", ce.Code, ce.Error())
		return
	}
	fmt.Fprintf(w, "%s: %v\n", name, err)
}
