package authzen

import (
	"context"

	"github.com/dialogtrust/dialogtrust/authz"
)

// The names this package sends. docs/proxy.md and docs/tts.md ("AuthZEN setup") list
// the same; a PDP's policy is written against them.
const (
	// SubjectWorkload is the subject type of every request: a workload, identified by
	// its WIMSE or SPIFFE identifier.
	SubjectWorkload = "workload"
	// ResourceTool, ResourceSkill and ResourcePath are the resource types at a
	// receiver: the MCP tool of a tools/call, the A2A skill asked for, else the path.
	ResourceTool  = "tool"
	ResourceSkill = "skill"
	ResourcePath  = "path"
	// ActionIssue and ResourceTxnToken are the action and resource type at the TTS.
	ActionIssue      = "issue"
	ResourceTxnToken = "txn_token"
)

// Decider is an authz.Decider that asks a PDP about each verified request at a
// receiver or the proxy ingress (RequestFor says how the request is mapped).
type Decider struct{ Client *Client }

// Decide implements authz.Decider.
func (d Decider) Decide(ctx context.Context, r *authz.Request) (authz.Decision, error) {
	return d.Client.Evaluate(ctx, RequestFor(r))
}

// RequestFor maps what a receiver verified to an Access Evaluation request:
//
//	subject   type "workload", id the sender (the WIT sub), properties trust_domain
//	          and proof ("httpsig" or "wpt")
//	action    name the host operation (an MCP method such as "tools/call", an A2A method
//	          such as "message/send"), else the HTTP method; properties method and, with
//	          a host protocol, protocol
//	resource  type "tool" (an MCP tools/call) or "skill" (an A2A skill) with id its name,
//	          else type "path" with id the path; properties path
//	context   dialog, initiator, initiator_proved, linked_from and txn (the verified
//	          Txn-Token's claims), each only when there is one (initiator_proved with
//	          the initiator)
//
// Only verified facts are sent: authz.Request holds nothing else.
func RequestFor(r *authz.Request) *EvaluationRequest {
	subject := Subject{Type: SubjectWorkload, ID: r.Sender, Properties: map[string]any{}}
	if r.SenderTrustDomain != "" {
		subject.Properties["trust_domain"] = r.SenderTrustDomain
	}
	if r.Proof != "" {
		subject.Properties["proof"] = r.Proof
	}
	action := Action{Name: r.Method, Properties: map[string]any{"method": r.Method}}
	if r.Operation != "" {
		action.Name = r.Operation
	}
	if r.Protocol != "" {
		action.Properties["protocol"] = r.Protocol
	}
	resource := Resource{Type: ResourcePath, ID: r.Path, Properties: map[string]any{"path": r.Path}}
	switch {
	case r.Name != "" && r.Protocol == "mcp":
		resource.Type, resource.ID = ResourceTool, r.Name
	case r.Name != "" && r.Protocol == "a2a":
		resource.Type, resource.ID = ResourceSkill, r.Name
	}
	ctx := map[string]any{}
	if r.Dialog != "" {
		ctx["dialog"] = r.Dialog
	}
	if r.Initiator != "" {
		ctx["initiator"] = r.Initiator
		ctx["initiator_proved"] = r.InitiatorProved
	}
	if r.LinkedFrom != "" {
		ctx["linked_from"] = r.LinkedFrom
	}
	if r.Txn != nil {
		ctx["txn"] = r.Txn
	}
	return &EvaluationRequest{Subject: subject, Action: action, Resource: resource, Context: ctx}
}

// Issuance is what the TTS asks about after its own policy allowed an issuance (the
// claims it would sign are built; nothing is signed yet).
type Issuance struct {
	// Requester is the authenticated workload asking for the token, RequesterTrustDomain
	// its trust domain and Proof how it authenticated (the client authentication method).
	Requester            string
	RequesterTrustDomain string
	Proof                string
	// Audience is the trust domain the token is for and Scopes the scopes it would carry.
	Audience string
	Scopes   []string
	// Replacement says whether the subject token is a Txn-Token being replaced; then Txn
	// is its txn and CallChain the requesters so far.
	Replacement bool
	Txn         string
	CallChain   []string
	// SubjectTokenType, SubjectIssuer and Subject describe the validated subject token
	// (Subject is the Txn-Token's sub); SubjectScopes its scope when known.
	SubjectTokenType string
	SubjectIssuer    string
	Subject          string
	SubjectScopes    []string
	// Dialog is the dialog (tctx.dlg), Details the tctx members and RequestContext the
	// rctx members the token would carry.
	Dialog         string
	Details        map[string]any
	RequestContext map[string]any
}

// IssuanceRequest maps an issuance to an Access Evaluation request:
//
//	subject   type "workload", id the requester, properties trust_domain and proof
//	action    name "issue", properties replacement (true or false)
//	resource  type "txn_token", id the audience, properties scopes (an array)
//	context   dlg, request_details (tctx), request_context (rctx), subject_token
//	          {type, iss, sub, scope}, and for a replacement txn and call_chain
func IssuanceRequest(in *Issuance) *EvaluationRequest {
	subject := Subject{Type: SubjectWorkload, ID: in.Requester, Properties: map[string]any{}}
	if in.RequesterTrustDomain != "" {
		subject.Properties["trust_domain"] = in.RequesterTrustDomain
	}
	if in.Proof != "" {
		subject.Properties["proof"] = in.Proof
	}
	scopes := in.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	st := map[string]any{"type": in.SubjectTokenType, "sub": in.Subject}
	if in.SubjectIssuer != "" {
		st["iss"] = in.SubjectIssuer
	}
	if in.SubjectScopes != nil {
		st["scope"] = in.SubjectScopes
	}
	ctx := map[string]any{"subject_token": st}
	if in.Dialog != "" {
		ctx["dlg"] = in.Dialog
	}
	if len(in.Details) > 0 {
		ctx["request_details"] = in.Details
	}
	if len(in.RequestContext) > 0 {
		ctx["request_context"] = in.RequestContext
	}
	if in.Replacement {
		ctx["txn"] = in.Txn
		ctx["call_chain"] = in.CallChain
	}
	return &EvaluationRequest{
		Subject:  subject,
		Action:   Action{Name: ActionIssue, Properties: map[string]any{"replacement": in.Replacement}},
		Resource: Resource{Type: ResourceTxnToken, ID: in.Audience, Properties: map[string]any{"scopes": scopes}},
		Context:  ctx,
	}
}

// DecideIssuance asks the PDP about an issuance (IssuanceRequest).
func (c *Client) DecideIssuance(ctx context.Context, in *Issuance) (authz.Decision, error) {
	return c.Evaluate(ctx, IssuanceRequest(in))
}
