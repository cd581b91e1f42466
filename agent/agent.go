package agent

import (
	"context"
	"crypto/rand"
	"net/http"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// Agent is a participant that calls others through a signing Transport.
type Agent struct {
	// Self is the agent's workload identifier (its WIT sub): the initiator of the
	// dialogs it starts.
	Self identifier.ID
	// Client sends the requests; its Transport should be a *Transport.
	Client *http.Client
}

// NewDialogID returns a fresh dialog identifier (128 random bits, base32).
func NewDialogID() string { return rand.Text() }

// Start proposes a new dialog with the agent as initiator in req (which may carry the
// dialog's first input, so establishing adds no round trip) and returns the response
// and the dialog context. The server's signed response must echo exactly the proposed
// context (section 5); the Transport checks that for signed responses, and Start also
// refuses a successful unsigned answer that echoes another context or none, but for
// the receiver's refusal of a JSON-RPC request (a JSON-RPC error on 200 that echoes
// none, since the dialog was not established), which is returned as the error it
// carries: the receiver's code and kind, with SignedRefusal in the chain when the
// Transport verified its signature, UnverifiedRefusal otherwise.
// dlg "" picks a fresh one.
func (a *Agent) Start(ctx context.Context, req *http.Request, dlg string) (*http.Response, *dialog.Context, error) {
	if dlg == "" {
		dlg = NewDialogID()
	}
	dc, err := dialog.New(dlg, a.Self)
	if err != nil {
		return nil, nil, err
	}
	res, err := a.Continue(ctx, req, dc, nil)
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode < 300 {
		// Section 5: the initiator checks the context the server accepted. An answer
		// that echoes none, or a malformed one, cannot be checked and is refused.
		got, err := dialog.FromHeader(res.Header)
		switch {
		case err != nil:
			res.Body.Close()
			return nil, nil, err
		case got == nil:
			// The receiver's refusal of a JSON-RPC request comes on 200 without the
			// echo (it established no dialog): its code, not the missing echo, says
			// why. Any other answer without the echo stays a mismatch.
			refusal := firstRequestRefusal(res)
			res.Body.Close()
			if refusal != nil {
				return nil, nil, refusal
			}
			return nil, nil, errcode.New(errcode.DialogContextMismatch, "the server's answer echoes no Dialog-Context: the accepted context cannot be checked")
		case !got.Equal(dc):
			res.Body.Close()
			return nil, nil, errcode.New(errcode.DialogContextMismatch, "the server accepted a different Dialog-Context than proposed")
		}
	}
	return res, dc, nil
}

// Continue sends req in dialog dc, with the provenance prov of earlier hops when the
// agent forwards a request it received (dialog.Verified.Forward), else nil.
func (a *Agent) Continue(ctx context.Context, req *http.Request, dc *dialog.Context, prov *dialog.Provenance) (*http.Response, error) {
	ctx = WithDialog(ctx, dc)
	if prov != nil {
		ctx = WithProvenance(ctx, prov)
	}
	c := a.Client
	if c == nil {
		c = http.DefaultClient
	}
	return c.Do(req.WithContext(ctx))
}
