package grantpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/dialogtrust/dialogtrust/condition"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Expr is a CEL expression of a policy rule (package condition) and where it was
// written, for the error at load and the log line of a refusal.
type Expr struct {
	Text   string
	Source condition.Source
}

// The CEL variables of an issuance rule (docs/tts.md, "Conditions"). Each is a Go
// struct whose cel tags are the field names the expressions use, so a misspelt field
// is an error at load. A JSON object (claims, request_details, tctx) is a
// condition.LazyObject, map(string, dyn), decoded (every number a double, as in a
// google.protobuf.Struct) only when an expression reads it.
type (
	// condRequester is requester: the authenticated workload.
	condRequester struct {
		Workload    string `cel:"workload"`
		TrustDomain string `cel:"trust_domain"`
		// Proof is the client authentication method: wit_httpsig, wit_wpt,
		// tls_client_auth or private_key_jwt.
		Proof string `cel:"proof"`
	}
	// condSubject is subject: the validated subject token.
	condSubject struct {
		Type   string                `cel:"type"` // the subject_token_type URN
		Issuer string                `cel:"issuer"`
		Sub    string                `cel:"sub"` // as it enters the token (with its prefix)
		Scopes []string              `cel:"scopes"`
		Claims *condition.LazyObject `cel:"claims"`
	}
	// condRequest is request: the token request.
	condRequest struct {
		Audience string                `cel:"audience"`
		Resource string                `cel:"resource"`
		Scopes   []string              `cel:"scopes"`
		Dlg      string                `cel:"dlg"`     // request_details.dlg ("" without)
		Details  *condition.LazyObject `cel:"details"` // request_details
		Context  *condition.LazyObject `cel:"context"` // request_context

		// RequestedTokenType is requested_token_type ("" when absent), e.g.
		// urn:ietf:params:oauth:token-type:id-jag at AS A (issue 28).
		RequestedTokenType string `cel:"requested_token_type"`
	}
	// condInput is input: the Txn-Token a replacement replaces (present false
	// otherwise).
	condInput struct {
		Present    bool                  `cel:"present"`
		Txn        string                `cel:"txn"`
		Sub        string                `cel:"sub"`
		Scopes     []string              `cel:"scopes"`
		CallChain  []string              `cel:"call_chain"`
		Extensions int64                 `cel:"extensions"`
		Tctx       *condition.LazyObject `cel:"tctx"`
		Rctx       *condition.LazyObject `cel:"rctx"`
	}
	// condTarget is target: the peer a chaining request is for.
	condTarget struct {
		Peer     string   `cel:"peer"` // the peer authorization server's issuer
		Audience []string `cel:"audience"`
	}
)

// The places conditions are written in this package's rules.
const (
	PlaceIssuance = "tts issuance policy"
	PlaceChaining = "chaining policy"
)

var (
	envOnce  sync.Once
	envs     map[string]*condition.Env
	envError error
)

// ConditionEnv is the environment of a place (PlaceIssuance: requester, subject,
// request, input; PlaceChaining: the same, target and grant).
func ConditionEnv(place string) (*condition.Env, error) {
	envOnce.Do(func() {
		common := []condition.Var{
			condition.StructVar("requester", condRequester{}),
			condition.StructVar("subject", condSubject{}),
			condition.StructVar("request", condRequest{}).Within(0, map[string]uint64{
				"scopes": maxRequestScopes, "scopes.@items": maxScopeToken}),
			condition.StructVar("input", condInput{}),
		}
		envs = map[string]*condition.Env{}
		for place, vars := range map[string][]condition.Var{
			PlaceIssuance: common,
			PlaceChaining: append(slices.Clone(common), condition.StructVar("target", condTarget{}), condition.StructVar("grant", condGrant{})),
		} {
			e, err := condition.NewEnv(place, vars)
			if err != nil {
				envError = err
				return
			}
			envs[place] = e
		}
	})
	if envError != nil {
		return nil, envError
	}
	e, ok := envs[place]
	if !ok {
		return nil, fmt.Errorf("grantpolicy: no condition place %q", place)
	}
	return e, nil
}

// Subject is what a rule's expressions see of the validated subject token.
type Subject struct {
	Type, Issuer, Sub string
	Scopes            []string
	// Claims are the subject token's claims (nil: none).
	Claims *Claims
	// Input is the Txn-Token a replacement replaces (nil otherwise); its claims are
	// the subject's when Claims is nil.
	Input *txntoken.Claims
}

// Claims are a verified token's claims as the expressions read them: decoded on first
// use only, then kept, so that the copies of a cached subject token share one decoding.
// Safe for concurrent use.
type Claims struct {
	obj *condition.LazyObject
}

// NewClaims holds a token's verified payload (JSON text) for the expressions; a
// payload that is not a JSON object (it never is, once verified) is an empty object.
func NewClaims(payload []byte) *Claims {
	return &Claims{obj: condition.NewLazyObject(payload, decodePayload)}
}

func decodePayload(src any) map[string]any { return payloadObject(src.([]byte)) }

func payloadObject(payload []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(payload, &m) != nil {
		return nil
	}
	return m
}

// Conditions are the CEL parts of a rule, compiled.
type Conditions struct {
	when   *condition.Program
	scopes *condition.Program
	tctx   []memberProgram
}

type memberProgram struct {
	name string
	prg  *condition.Program
}

// Empty says the rule has no CEL part.
func (c *Conditions) Empty() bool {
	return c == nil || c.when == nil && c.scopes == nil && len(c.tctx) == 0
}

// reservedMembers may not be computed: sub, txn and aud come from the subject token
// and the audience, dlg only from request_details (dialog-binding section 10).
var reservedMembers = []string{"sub", "txn", "aud", txntoken.DialogMember}

// CompileConditions compiles a rule's when (bool), scopes (list(string)) and tctx
// members (any JSON value) in place; an empty Text is no expression. The error is a
// *condition.CompileError naming file, line, field and expression.
func Compile(place string, when, scopes Expr, tctx map[string]Expr) (*Conditions, error) {
	env, err := ConditionEnv(place)
	if err != nil {
		return nil, err
	}
	c := &Conditions{}
	if when.Text != "" {
		if c.when, err = env.Compile(when.Source, when.Text, condition.Bool); err != nil {
			return nil, err
		}
	}
	if scopes.Text != "" {
		if c.scopes, err = env.Compile(scopes.Source, scopes.Text, condition.StringList); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(tctx))
	for n := range tctx {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		x := tctx[n]
		if slices.Contains(reservedMembers, n) || n == "" {
			return nil, fmt.Errorf("%s: tctx member %q cannot be computed (sub, txn and aud come from the subject token and audience, dlg only from request_details)", x.Source, n)
		}
		p, err := env.Compile(x.Source, x.Text, condition.Dyn)
		if err != nil {
			return nil, err
		}
		c.tctx = append(c.tctx, memberProgram{n, p})
	}
	return c, nil
}

// Holds evaluates the condition (true without one). An evaluation that fails is a
// refusal of the rule named name, the condition error beneath.
func (c *Conditions) Holds(name string, in *condition.Input) (bool, error) {
	if c == nil || c.when == nil {
		return true, nil
	}
	ok, err := c.when.BoolInput(in)
	if err != nil {
		return false, refusal(name, err)
	}
	return ok, nil
}

// Narrow returns the granted scopes: those of granted the rule's scopes expression
// lists, in granted's order (granted itself without one). The expression narrows, it
// never widens: a scope it names that was not requested is not granted. Nothing left
// of a non-empty request is scope_too_broad.
func (c *Conditions) Narrow(name string, in *condition.Input, granted []string) ([]string, error) {
	if c == nil || c.scopes == nil {
		return granted, nil
	}
	allowed, err := c.scopes.StringsInput(in)
	if err != nil {
		return nil, refusal(name, err)
	}
	out := make([]string, 0, len(granted))
	for _, s := range granted {
		if slices.Contains(allowed, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 && len(granted) > 0 {
		return nil, errcode.New(errcode.ScopeTooBroad, "policy rule %q grants none of the requested scopes", name)
	}
	return out, nil
}

// Members computes the rule's tctx members as JSON text.
func (c *Conditions) Members(name string, in *condition.Input) (map[string]json.RawMessage, error) {
	if c == nil || len(c.tctx) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(c.tctx))
	for _, m := range c.tctx {
		v, err := m.prg.JSONInput(in)
		if err != nil {
			return nil, refusal(name, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, refusal(name, errcode.Wrap(errcode.ConditionError, err, "tctx.%s is not JSON", m.name))
		}
		out[m.name] = b
	}
	return out, nil
}

// refusal is the error of a rule that could not be evaluated: the code and kind of the
// condition's error, a detail that names the rule only (what the client reads), and
// the condition's error beneath (file, line and cause, for the log).
func refusal(rule string, err error) error {
	return &errcode.Error{Code: errcode.CodeOf(err), Kind: errcode.KindOf(err),
		Detail: fmt.Sprintf("policy rule %q could not be evaluated, so it refuses", rule), Err: err}
}

// The sizes of request.scopes that the token endpoints keep (oauth.ParseScope of a
// scope parameter of at most oauth.MaxScopeSize octets: non-empty tokens separated by
// single spaces), declared to the cost estimate; a request beyond them (one not read
// by an endpoint, such as a recorded request of dialogtrust policy test) is refused
// rather than evaluated without the runtime cost tracker.
const (
	maxRequestScopes = (oauth.MaxScopeSize + 1) / 2
	maxScopeToken    = oauth.MaxScopeSize
)

// Target is the peer a chaining request is for (target), and the grant it is about
// (grant, issue 28).
type Target struct {
	Peer     string   // the peer authorization server's issuer
	Audience []string // its audiences
	Grant    Grant
}

// NewInput is the variables of one token request at place (target only at
// PlaceChaining, nil elsewhere) for the rule's expressions (Holds, Narrow, Members),
// under ctx and the place's evaluation deadline, which counts from here. Each variable
// is computed only if an expression reads it, and a JSON object in it (the claims,
// request_details) only decoded then. Close it once the request is decided.
func NewInput(ctx context.Context, place string, tr *oauth.TokenRequest, req *oauth.Client, subj Subject, target *Target) *condition.Input {
	env, err := ConditionEnv(place)
	if err != nil {
		return nil // nothing compiled at this place, so nothing is evaluated
	}
	v := requestVarsPool.Get().(*requestVars)
	v.tr, v.req, v.subj, v.target = tr, req, subj, target
	return env.NewInputFrom(ctx, v)
}

var requestVarsPool = sync.Pool{New: func() any { return new(requestVars) }}

// Release implements the end of the Input: the struct serves another request. What
// the expressions' results hold of it (strings) is not changed by the next request.
func (v *requestVars) Release() {
	*v = requestVars{}
	requestVarsPool.Put(v)
}

// requestVars are the variables of one request, each built on first read, in place.
type requestVars struct {
	tr     *oauth.TokenRequest
	req    *oauth.Client
	subj   Subject
	target *Target

	requester condRequester
	subject   condSubject
	request   condRequest
	input     condInput
	peer      condTarget
	grant     condGrant
	// objects are the JSON objects of the variables, kept here for the next request:
	// request_details, request_context, the input's claims, tctx and rctx.
	objects [5]condition.LazyObject
}

// Var implements condition.Resolver.
func (v *requestVars) Var(name string) (any, bool) {
	switch name {
	case "requester":
		v.requester = condRequester{Workload: v.req.IDString(), TrustDomain: v.req.ID.TrustDomain(), Proof: v.req.Method}
		return &v.requester, true
	case "subject":
		v.subject = subjectVar(&v.subj, &v.objects[2])
		return &v.subject, true
	case "request":
		tr := v.tr
		if err := scopesWithinBounds(tr.Scope); err != nil {
			return err, true
		}
		v.request = condRequest{Audience: tr.Audience, Resource: tr.Resource, Scopes: nonNil(tr.Scope), Dlg: tr.Dialog(), RequestedTokenType: tr.RequestedTokenType,
			Details: rawStruct(&v.objects[0], tr.RequestDetails), Context: rawStruct(&v.objects[1], tr.RequestContext)}
		return &v.request, true
	case "input":
		v.input = inputVar(&v.subj, &v.objects[3], &v.objects[4])
		return &v.input, true
	case "target":
		if v.target == nil {
			return nil, false
		}
		v.peer = condTarget{Peer: v.target.Peer, Audience: nonNil(v.target.Audience)}
		return &v.peer, true
	case "grant":
		if v.target == nil {
			return nil, false
		}
		v.grant = v.target.Grant.cond()
		return &v.grant, true
	}
	return nil, false
}

// scopesWithinBounds is nil for requested scopes of the sizes declared to the cost
// estimate, an evaluation error otherwise.
func scopesWithinBounds(scopes []string) any {
	if len(scopes) > maxRequestScopes {
		return condition.BadValue("request.scopes: %d scopes, more than the %d a scope parameter can carry", len(scopes), maxRequestScopes)
	}
	for _, s := range scopes {
		if len(s) > maxScopeToken {
			return condition.BadValue("request.scopes: a scope of %d octets, more than a scope parameter can carry", len(s))
		}
	}
	return nil
}

// subjectVar is subject; the claims of an input Txn-Token that is the subject are
// kept in obj.
func subjectVar(subj *Subject, obj *condition.LazyObject) condSubject {
	if subj == nil {
		return condSubject{Scopes: []string{}}
	}
	v := condSubject{Type: subj.Type, Issuer: subj.Issuer, Sub: subj.Sub, Scopes: nonNil(subj.Scopes)}
	switch {
	case subj.Claims != nil:
		v.Claims = subj.Claims.obj
	case subj.Input != nil:
		obj.Reset(subj.Input, decodeTxn)
		v.Claims = obj
	}
	return v
}

func decodeTxn(src any) map[string]any {
	b, err := src.(*txntoken.Claims).MarshalJSON()
	if err != nil {
		return nil
	}
	return payloadObject(b)
}

// inputVar is input; its tctx and rctx are kept in tctx and rctx.
func inputVar(subj *Subject, tctx, rctx *condition.LazyObject) condInput {
	if subj == nil || subj.Input == nil {
		return noInput
	}
	in := subj.Input
	return condInput{Present: true, Txn: in.Txn, Sub: in.Sub, Scopes: nonNil(in.ScopeList()), CallChain: nonNil(in.CallChain()),
		Extensions: int64(in.Ext), Tctx: plainStruct(tctx, in.Tctx), Rctx: plainStruct(rctx, in.Rctx)}
}

// noInput is shared by every request without an input Txn-Token: CEL only reads it.
var noInput = condInput{Scopes: []string{}, CallChain: []string{}}

// plainStruct is a tctx or rctx as CEL reads it, converted on first read (nil, an
// empty object, when there is none).
func plainStruct(obj *condition.LazyObject, o map[string]any) *condition.LazyObject {
	if len(o) == 0 {
		return nil
	}
	obj.Reset(o, decodePlain)
	return obj
}

func decodePlain(src any) map[string]any { return plainObject(src.(map[string]any)) }

// rawStruct is request_details or request_context as CEL reads it, decoded on first
// read (nil, an empty object, when there is none).
func rawStruct(obj *condition.LazyObject, o map[string]json.RawMessage) *condition.LazyObject {
	if len(o) == 0 {
		return nil
	}
	obj.Reset(o, decodeRaw)
	return obj
}

func decodeRaw(src any) map[string]any { return rawObject(src.(map[string]json.RawMessage)) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func rawObject(o map[string]json.RawMessage) map[string]any {
	m := make(map[string]any, len(o))
	for k, raw := range o {
		var v any
		if netjson.DecodeKeepingNumbers(raw, &v) == nil {
			m[k] = plainValue(v)
		}
	}
	return m
}

func plainObject(o map[string]any) map[string]any {
	m := make(map[string]any, len(o))
	for k, v := range o {
		m[k] = plainValue(v)
	}
	return m
}

// plainValue turns what the JSON readers give (json.Number, json.RawMessage) into the
// values CEL knows.
func plainValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case json.RawMessage:
		var d any
		if netjson.DecodeKeepingNumbers(x, &d) != nil {
			return nil
		}
		return plainValue(d)
	case map[string]any:
		return plainObject(x)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = plainValue(e)
		}
		return l
	}
	return v
}
