package tts

import (
	"context"
	"fmt"
	"slices"

	"github.com/dialogtrust/dialogtrust/condition"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
)

// Expr is a CEL expression of a rule and where it was written (grantpolicy.Expr).
type Expr = grantpolicy.Expr

// compile names the rules, checks that each can decide something, and compiles their
// CEL parts (a type error is an error here, at load, with the file and line).
//
// Several rules may share one workload pattern: they are tried in their order and the
// first that allows the audience and subject token type and whose When holds decides.
// A rule of the pattern after one without When could never decide, so it is refused;
// a workload is still governed only by the rules of its most specific pattern, so a
// When never lets a request fall through to a broader prefix.
func (p *Policy) compile() error {
	names := map[string]bool{}
	unconditional := map[string]string{}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Name == "" {
			r.Name = r.Workload
		}
		if names[r.Name] {
			if r.Name == r.Workload {
				return fmt.Errorf("tts: two policy rules for %q (give the later ones a when and a name)", r.Workload)
			}
			return fmt.Errorf("tts: two policy rules named %q", r.Name)
		}
		names[r.Name] = true
		if prev, ok := unconditional[r.Workload]; ok {
			return fmt.Errorf("tts: policy rule %q can never decide: rule %q for %q has no when and comes first", r.Name, prev, r.Workload)
		}
		if r.When.Text == "" {
			unconditional[r.Workload] = r.Name
		}
		conds, err := grantpolicy.Compile(grantpolicy.PlaceIssuance, r.When, r.GrantScopes, r.Tctx)
		if err != nil {
			return err
		}
		if !conds.Empty() {
			r.conds = conds
		}
	}
	return nil
}

// anyRule says whether a rule of the pattern passes ok.
func (p *Policy) anyRule(pattern string, ok func(*Rule) bool) bool {
	for i := range p.Rules {
		if r := &p.Rules[i]; r.Workload == pattern && ok(r) {
			return true
		}
	}
	return false
}

// decide returns the rule of the pattern that decides the request: the first that
// allows its audience and subject token type and whose When holds; and the
// variables of the request when that rule has CEL parts (nil otherwise), which the
// caller closes once the request is decided (Close of nil does nothing). A rule whose
// When cannot be evaluated refuses the request (returned with the error, so the log
// names it): no later rule is tried.
func (p *Policy) decide(ctx context.Context, pattern string, tr *oauth.TokenRequest, req *oauth.Client, subj *Subject) (*Rule, *condition.Input, error) {
	var in *condition.Input
	tried := 0
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Workload != pattern || !r.mayAudience(tr.Audience, req.ID) || !r.mayType(tr.SubjectTokenType) {
			continue
		}
		if r.conds == nil {
			in.Close()
			return r, nil, nil
		}
		if in == nil {
			in = grantpolicy.NewInput(ctx, grantpolicy.PlaceIssuance, tr, req, subj.policySubject(), nil)
		}
		tried++
		ok, err := r.conds.Holds(r.Name, in)
		if err != nil {
			in.Close()
			return r, nil, err
		}
		if ok {
			return r, in, nil
		}
	}
	in.Close()
	return nil, nil, errcode.New(errcode.WorkloadNotAllowed, "the condition of none of the %d policy rules for %s holds for this request", tried, req.IDString())
}

// policySubject is what the rules' expressions see of the subject.
func (s *Subject) policySubject() grantpolicy.Subject {
	return grantpolicy.Subject{Type: s.TokenType, Issuer: s.Issuer, Sub: s.Sub, Scopes: s.Scope, Claims: s.claims, Input: s.Input}
}

// Check makes every check New makes of the policy, on a copy: the rules' workloads,
// names and token types, and their CEL parts compiled and type-checked (-check-config).
func (p Policy) Check() error {
	p.Rules = slices.Clone(p.Rules)
	return p.normalize()
}

// Compile makes the checks New makes of the policy and compiles its rules in place, for
// Decide outside a server.
func (p *Policy) Compile() error { return p.normalize() }
