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

// The members below are structs, not maps: encoding/json writes them without sorting,
// in the order of their fields (alphabetical, as a map would be written), and the
// TTS pays for the encoding on every token, cached decision or not.

// workloadProperties are the subject properties of a workload.
type workloadProperties struct {
	Proof       string `json:"proof,omitempty"`
	TrustDomain string `json:"trust_domain,omitempty"`
}

func workloadSubject(id, td, proof string) Subject {
	s := Subject{Type: SubjectWorkload, ID: id}
	if td != "" || proof != "" {
		s.Properties = &workloadProperties{Proof: proof, TrustDomain: td}
	}
	return s
}

type receiverAction struct {
	Method   string `json:"method"`
	Protocol string `json:"protocol,omitempty"`
}

type receiverResource struct {
	Path string `json:"path"`
}

type receiverContext struct {
	Dialog          string         `json:"dialog,omitempty"`
	Initiator       string         `json:"initiator,omitempty"`
	InitiatorProved *bool          `json:"initiator_proved,omitempty"`
	LinkedFrom      string         `json:"linked_from,omitempty"`
	Txn             map[string]any `json:"txn,omitempty"`
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
	action := Action{Name: r.Method, Properties: &receiverAction{Method: r.Method, Protocol: r.Protocol}}
	if r.Operation != "" {
		action.Name = r.Operation
	}
	resource := Resource{Type: ResourcePath, ID: r.Path, Properties: &receiverResource{Path: r.Path}}
	switch {
	case r.Name != "" && r.Protocol == "mcp":
		resource.Type, resource.ID = ResourceTool, r.Name
	case r.Name != "" && r.Protocol == "a2a":
		resource.Type, resource.ID = ResourceSkill, r.Name
	}
	out := &EvaluationRequest{Subject: workloadSubject(r.Sender, r.SenderTrustDomain, r.Proof), Action: action, Resource: resource}
	if r.Dialog != "" || r.Initiator != "" || r.LinkedFrom != "" || r.Txn != nil {
		ctx := &receiverContext{Dialog: r.Dialog, Initiator: r.Initiator, LinkedFrom: r.LinkedFrom, Txn: r.Txn}
		if r.Initiator != "" {
			ctx.InitiatorProved = &r.InitiatorProved
		}
		out.Context = ctx
	}
	return out
}

type issueAction struct {
	Replacement bool `json:"replacement"`
}

type tokenResource struct {
	Scopes []string `json:"scopes"`
}

type subjectToken struct {
	Iss   string   `json:"iss,omitempty"`
	Scope []string `json:"scope,omitempty"`
	Sub   string   `json:"sub"`
	Type  string   `json:"type"`
}

type issuanceContext struct {
	CallChain      []string       `json:"call_chain,omitempty"`
	Dlg            string         `json:"dlg,omitempty"`
	RequestContext map[string]any `json:"request_context,omitempty"`
	RequestDetails map[string]any `json:"request_details,omitempty"`
	SubjectToken   subjectToken   `json:"subject_token"`
	Txn            string         `json:"txn,omitempty"`
}

// IssuanceRequest maps an issuance to an Access Evaluation request:
//
//	subject   type "workload", id the requester, properties trust_domain and proof
//	action    name "issue", properties replacement (true or false)
//	resource  type "txn_token", id the audience, properties scopes (an array)
//	context   dlg, request_details (tctx), request_context (rctx), subject_token
//	          {type, iss, sub, scope}, and for a replacement txn and call_chain
func IssuanceRequest(in *authz.Issuance) *EvaluationRequest {
	scopes := in.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	ctx := &issuanceContext{
		Dlg: in.Dialog, RequestContext: in.RequestContext, RequestDetails: in.Details,
		SubjectToken: subjectToken{Iss: in.SubjectIssuer, Scope: in.SubjectScopes, Sub: in.Subject, Type: in.SubjectTokenType},
	}
	if in.Replacement {
		ctx.Txn, ctx.CallChain = in.Txn, in.CallChain
	}
	return &EvaluationRequest{
		Subject:  workloadSubject(in.Requester, in.RequesterTrustDomain, in.Proof),
		Action:   Action{Name: ActionIssue, Properties: &issueAction{Replacement: in.Replacement}},
		Resource: Resource{Type: ResourceTxnToken, ID: in.Audience, Properties: &tokenResource{Scopes: scopes}},
		Context:  ctx,
	}
}

// DecideIssuance asks the PDP about an issuance (IssuanceRequest).
func (c *Client) DecideIssuance(ctx context.Context, in *authz.Issuance) (authz.Decision, error) {
	return c.Evaluate(ctx, IssuanceRequest(in))
}
