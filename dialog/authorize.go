package dialog

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
)

// WithAuthorizer has d decide, for every request that passed every check of section 12
// (the proof and its body, the Dialog-Context, the provenance, the Txn-Token), whether
// it may reach the handler (issue 25). d is asked about what was verified and about
// the host protocol's operation read from the authenticated body (hostproto
// .ReadOperation: the MCP method and tool, the A2A method and skill): AuthzRequest. It
// runs before anything the receiver records: the handoff step (whose handoff receiver
// records the offer) and the dialog's establishment, so that a request that may not go
// on leaves no offer and no dialog behind.
//
// A refusal reaches no handler: not_authorized (403, a failed check) when d does not
// allow, decision_unavailable (503, could not be completed) when d could not decide,
// in the host protocol's form (a JSON-RPC error for a JSON-RPC request, else the
// problem document). Neither carries d's Reason: wrap d with authz.Logged to log it.
//
// The body is read once, bounded by MaxHandoffBody, and handed on unchanged. A body
// whose operation cannot be read as the application would read it is refused
// (invalid_request): a Content-Encoding other than identity, a charset other than
// UTF-8, and what hostproto.ReadOperation refuses (a JSON-RPC batch, a member named
// twice).
func WithAuthorizer(d authz.Decider) ReceiverOption { return func(r *Receiver) { r.authorizer = d } }

// AuthzRequest is the authz.Request of a verified request: the facts v holds (sender,
// its trust domain, proof method, initiator and whether it was proved, dialog, the
// Txn-Token's claims), r's method and path, and op. LinkedFrom stays empty: nothing a
// receiver verifies names the dialog another one was linked from (dialog-binding
// section 11: only the participant that linked them knows).
func AuthzRequest(r *http.Request, v *Verified, op hostproto.Operation) (*authz.Request, error) {
	req := &authz.Request{
		Sender:            v.Sender.String(),
		SenderTrustDomain: v.Sender.TrustDomain(),
		Proof:             v.Proof.String(),
		Method:            r.Method,
		Path:              r.URL.Path,
		Protocol:          op.Protocol,
		Operation:         op.Method,
		Name:              op.Name,
	}
	if v.Context != nil {
		req.Initiator = v.Context.Initiator().String()
		req.InitiatorProved = v.InitiatorVerified
		req.Dialog = v.Context.DLG()
	}
	if v.Txn != nil {
		b, err := v.Txn.MarshalJSON()
		if err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "the Txn-Token claims cannot be put to the decision")
		}
		if err := json.Unmarshal(b, &req.Txn); err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "the Txn-Token claims cannot be put to the decision")
		}
	}
	return req, nil
}

// authorize is WithAuthorizer's step, on the body already read (nil without one).
func (rc *Receiver) authorize(ctx context.Context, r *http.Request, v *Verified, body []byte) error {
	op, err := operationOf(r.Header, body)
	if err != nil {
		return err
	}
	req, err := AuthzRequest(r, v, op)
	if err != nil {
		return err
	}
	dec, err := authz.Check(ctx, rc.authorizer, req)
	if rc.auditor != nil {
		v.audit.rule, v.audit.op = dec.Rule, strings.TrimSpace(op.Method+" "+op.Name)
	}
	return err
}

// operationOf reads the operation of body as the application will: refused when the
// octets are not what it decodes (an encoding, a charset).
func operationOf(h http.Header, body []byte) (hostproto.Operation, error) {
	if len(body) == 0 {
		return hostproto.Operation{}, nil
	}
	for _, ce := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(ce, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return hostproto.Operation{}, errcode.New(errcode.InvalidRequest, "a body with Content-Encoding %q: its operation cannot be read for the authorization decision", errcode.Cut(c))
			}
		}
	}
	if cts := h.Values("Content-Type"); len(cts) > 1 {
		return hostproto.Operation{}, errcode.New(errcode.DuplicateField, "more than one Content-Type field")
	} else if len(cts) == 1 {
		_, params, err := mime.ParseMediaType(cts[0])
		if err != nil {
			return hostproto.Operation{}, errcode.New(errcode.InvalidRequest, "the Content-Type cannot be read: its body's operation cannot be read for the authorization decision")
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
			return hostproto.Operation{}, errcode.New(errcode.InvalidRequest, "a body in charset %q: its operation cannot be read for the authorization decision", errcode.Cut(cs))
		}
	}
	return hostproto.ReadOperation(body)
}
