package tts

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Outcome is what the policy decided for one request (Policy.Decide).
type Outcome struct {
	// Rule names the rule that decided ("" when none did).
	Rule string
	// Err is the refusal (nil: the token would be issued).
	Err error
	// Scopes, Tctx and Rctx are what the token would carry (when issued).
	Scopes     []string
	Tctx, Rctx map[string]any
}

// TestSubject is a subject token as Policy.Decide reads it: what its handler would
// have validated, without the token. Claims is its payload (JSON text).
func TestSubject(tokenType, issuer, sub string, scopes []string, scopeKnown bool, claims []byte, input *txntoken.Claims) *Subject {
	s := &Subject{TokenType: tokenType, Issuer: issuer, Sub: sub, Scope: scopes, ScopeKnown: scopeKnown, Input: input}
	if claims != nil {
		s.claims = grantpolicy.NewClaims(claims)
	}
	return s
}

// Decide runs the policy's steps of the token endpoint on a parsed request, an
// authenticated requester and a validated subject: the rule (workload pattern,
// audience, subject token type, when), the scope (the subject's, scopes, grant_scopes)
// and the context (details, context, computed tctx members, a replacement's input),
// with the same errors as the endpoint. It verifies no signature and keeps no state:
// `dialogtrust policy test` runs a policy file on recorded requests with it.
func (p *Policy) Decide(ctx context.Context, tr *oauth.TokenRequest, req *oauth.Client, subj *Subject) Outcome {
	var out Outcome
	pattern, err := p.governing(req.IDString())
	if err != nil {
		out.Err = err
		return out
	}
	if !p.anyRule(pattern, func(r *Rule) bool { return r.mayAudience(tr.Audience, req.ID) }) {
		out.Err = errcode.New(errcode.WorkloadNotAllowed, "%s may not request Txn-Tokens for %s", req.ID, tr.Audience)
		return out
	}
	if tr.SubjectTokenType == TokenTypeRefreshToken {
		out.Err = errcode.New(errcode.UnsupportedTokenType, "a refresh token is never a subject token (TT section 13.3)")
		return out
	}
	if !p.anyRule(pattern, func(r *Rule) bool { return r.mayAudience(tr.Audience, req.ID) && r.mayType(tr.SubjectTokenType) }) {
		out.Err = errcode.New(errcode.WorkloadNotAllowed, "%s may not present %s subject tokens", req.ID, tr.SubjectTokenType)
		return out
	}
	rule, in, err := p.decide(ctx, pattern, tr, req, subj)
	defer in.Close()
	if rule != nil {
		out.Rule = rule.Name
	}
	if err != nil {
		out.Err = err
		return out
	}
	allowed, known, whose := subj.Scope, subj.ScopeKnown, "the subject token's"
	if subj.Input != nil {
		allowed, known, whose = subj.Input.ScopeList(), true, "the input Txn-Token's"
	} else if !known && len(rule.SubjectScopes) > 0 && (subj.TokenType == TokenTypeSelfSigned || subj.TokenType == TokenTypeUnsignedJSON) {
		allowed, known = rule.SubjectScopes, true
	}
	if !known {
		out.Err = errcode.New(errcode.ScopeUnknown, "the scope of the subject token cannot be determined, so no scope can be granted (TT section 13.14)")
		return out
	}
	if out.Scopes, out.Err = grantScope(tr.Scope, allowed, rule, whose); out.Err != nil {
		return out
	}
	if out.Scopes, out.Err = rule.conds.Narrow(rule.Name, in, out.Scopes); out.Err != nil {
		return out
	}
	computed, err := rule.conds.Members(rule.Name, in)
	if err != nil {
		out.Err = err
		return out
	}
	out.Tctx, out.Rctx = map[string]any{}, map[string]any{}
	if subj.Input != nil {
		maps.Copy(out.Tctx, subj.Input.Tctx)
		maps.Copy(out.Rctx, subj.Input.Rctx)
	}
	for name, v := range tr.RequestDetails {
		if old, kept := out.Tctx[name]; kept && subj.Input != nil && !jsonEqual(old, v) {
			code := errcode.ImmutableClaimChanged
			if name == txntoken.DialogMember {
				code = errcode.DialogMismatch
			}
			out.Err = errcode.New(code, "a replacement never changes tctx.%s", errcode.Cut(name))
			return out
		}
		if _, kept := out.Tctx[name]; !kept && !slices.Contains(immutableNames, name) && (name == txntoken.DialogMember || rule.mayDetail(name)) {
			out.Tctx[name] = v
		}
	}
	for name, v := range computed {
		if old, kept := out.Tctx[name]; kept && subj.Input != nil && !jsonEqual(old, v) {
			out.Err = errcode.New(errcode.ImmutableClaimChanged, "a replacement never changes tctx.%s (computed by policy rule %q)", errcode.Cut(name), rule.Name)
			return out
		}
		out.Tctx[name] = v
	}
	for name, v := range tr.RequestContext {
		if _, kept := out.Rctx[name]; !kept && rule.mayContext(name) {
			out.Rctx[name] = v
		}
	}
	for _, m := range []map[string]any{out.Tctx, out.Rctx} {
		for k, v := range m {
			if raw, ok := v.(json.RawMessage); ok {
				var d any
				_ = json.Unmarshal(raw, &d)
				m[k] = d
			}
		}
	}
	return out
}
