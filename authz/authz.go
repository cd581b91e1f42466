package authz

import (
	"context"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Request is what a decision point is asked about at a receiver or an ingress: only
// what was verified about the request (its proof, Dialog-Context, provenance and
// Txn-Token), and the host protocol's operation read from the authenticated body.
type Request struct {
	// Sender is the workload whose proof verified (the WIT sub), SenderTrustDomain its
	// trust domain, and Proof how it proved possession ("httpsig" or "wpt").
	Sender            string
	SenderTrustDomain string
	Proof             string
	// Initiator is the dialog's initiator as the Dialog-Context names it, and
	// InitiatorProved whether it was proved (the sender is the initiator, or a verified
	// provenance chain starts at it: dialog-binding section 12 step 2).
	Initiator       string
	InitiatorProved bool
	// Dialog is the dialog identifier (empty without a Dialog-Context) and LinkedFrom the
	// dialog it was linked from across a trust boundary (empty when not linked).
	Dialog     string
	LinkedFrom string
	// Txn holds the verified Txn-Token's claims (nil without one).
	Txn map[string]any
	// Method and Path are the HTTP request's method and path.
	Method string
	Path   string
	// Protocol is the host protocol of the body ("mcp", "a2a", or "" for none),
	// Operation its method (an MCP method such as "tools/call", an A2A method such as
	// "message/send"), and Name what the operation names: the MCP tool of a tools/call,
	// the A2A skill asked for (empty when it names none).
	Protocol  string
	Operation string
	Name      string
}

// Decision is a decision point's answer.
type Decision struct {
	// Allow says whether the request may go on.
	Allow bool
	// Rule names what decided: a rule's name, or the decision point ("authzen" and the
	// PDP's address). It is logged and audited.
	Rule string
	// Reason is the decision point's explanation. It is logged, never sent to the caller.
	Reason string
}

// Decider decides whether a verified request may go on. An error means the decision
// could not be made; callers refuse then, as they do when Allow is false.
type Decider interface {
	Decide(ctx context.Context, r *Request) (Decision, error)
}

// DeciderFunc adapts a function to a Decider.
type DeciderFunc func(ctx context.Context, r *Request) (Decision, error)

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, r *Request) (Decision, error) { return f(ctx, r) }

// Check asks d about r and turns its answer into the refusal a receiver sends: nil when
// allowed; not_authorized (failed) when not; decision_unavailable (incomplete) when the
// decision could not be made. The Decision is returned in every case so that the caller
// can log which rule decided and why.
func Check(ctx context.Context, d Decider, r *Request) (Decision, error) {
	dec, err := d.Decide(ctx, r)
	if err != nil {
		return dec, errcode.Unavailable(errcode.DecisionUnavailable, err, "the authorization decision could not be made")
	}
	if !dec.Allow {
		return dec, errcode.New(errcode.NotAuthorized, "not authorized by policy")
	}
	return dec, nil
}
