package testbed

import (
	"context"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Delegation is the cast of the SDK adapters' one-domain examples (adapters/mcp and
// adapters/a2a, Example): one trust domain, the planner delegating to a delegate of
// the same domain, a validator of the domain's WITs, and the handoff keys of the two.
type Delegation struct {
	*Domain
	Planner, Delegate Workload
	WITs              *wit.Validator
	Handoffs          *Handoffs
}

// StartDelegation starts the trust domain name (its WIT issuer and TTS), the planner
// and the delegate at delegatePath. The caller closes it.
func StartDelegation(ctx context.Context, name, delegatePath string) (*Delegation, error) {
	dom, err := StartDomain(ctx, name)
	if err != nil {
		return nil, err
	}
	d := &Delegation{Domain: dom, Planner: dom.Workload("/agent/planner"), Delegate: dom.Workload(delegatePath), WITs: WITs(ctx, dom)}
	if d.Handoffs, err = NewHandoffs(d.Planner.ID, d.Delegate.ID); err != nil {
		dom.Close()
		return nil, err
	}
	return d, nil
}

// Receivers are the delegate's handoff receiver and its dialog receiver, as a tool
// server or an agent builds them: HTTP signatures for audiences verified with the
// domain's WITs, handoffs read in the requests of host only.
func (d *Delegation) Receivers(host hostproto.Host, audiences ...string) (*handoff.Receiver, *dialog.Receiver, error) {
	return delegateReceivers(d.Delegate, d.Handoffs, d.WITs, host, audiences, nil)
}

// delegateReceivers are the handoff receiver of the delegate self, with its status key
// and hopts, and its dialog receiver: HTTP signatures for audiences verified with wits,
// handoffs in the requests of host, and dopts. Records in memory are lost at a
// restart; these and the handoff keys were made just now, so no offer predates them
// (WithRecordsLostAt: section 8.4 does not apply).
func delegateReceivers(self Workload, h *Handoffs, wits *wit.Validator, host hostproto.Host, audiences []string, hopts []handoff.ReceiverOption, dopts ...dialog.ReceiverOption) (*handoff.Receiver, *dialog.Receiver, error) {
	hopts = append([]handoff.ReceiverOption{handoff.WithStatusKey(h.DelegateKey), handoff.WithRecordsLostAt(time.Time{})}, hopts...)
	hr := handoff.NewReceiver(self.ID.String(), h.Trust, store.NewMemoryRecords(), hopts...)
	dopts = append([]dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(audiences...), httpsig.WithReplay(store.NewMemory()))),
	}, append(dopts, dialog.WithHandoffsIn(hr, host))...)
	rc, err := dialog.NewReceiver(dopts...)
	return hr, rc, err
}
