package authz

import (
	"context"
	"fmt"

	"github.com/dialogtrust/dialogtrust/condition"
)

// Rule is one allow rule: a name (logged with each decision it makes) and a CEL
// condition over the variables of Vars, written at Source.
type Rule struct {
	Name   string
	Allow  string
	Source condition.Source
}

// Vars are the variables an allow condition may use, one per fact of a Request:
//
//	sender               string  the workload whose proof verified (its WIT sub)
//	sender_trust_domain  string  the sender's trust domain
//	proof                string  "httpsig" or "wpt"
//	initiator            string  the dialog's initiator ("" without a Dialog-Context)
//	initiator_proved     bool    whether the initiator was proved (section 12 step 2)
//	dialog               string  the dialog identifier ("" without one)
//	linked_from          string  the dialog this one was linked from ("" when none is known)
//	txn                  map     the verified Txn-Token's claims (empty without one)
//	method, path         string  the HTTP request's method and path
//	protocol             string  "mcp", "a2a" or "" (no JSON-RPC request)
//	operation            string  the JSON-RPC method (tools/call, message/send, SendMessage)
//	name                 string  the MCP tool of a tools/call, the A2A skill asked for
func Vars() []condition.Var {
	s := func(n string) condition.Var { return condition.Variable(n, condition.String) }
	return []condition.Var{
		s("sender"), s("sender_trust_domain"), s("proof"), s("initiator"),
		condition.Variable("initiator_proved", condition.Bool),
		s("dialog"), s("linked_from"),
		condition.Variable("txn", condition.Object),
		s("method"), s("path"), s("protocol"), s("operation"), s("name"),
	}
}

// Rules decides with allow rules in CEL (package condition): the first rule whose
// condition holds allows; when none does, the request is refused. A condition that
// cannot be evaluated (an error such as a missing txn claim, the cost limit, the
// deadline) stops the decision: Decide returns the error, and Check refuses with
// decision_unavailable. A rule after it is not asked: a broken rule never lets a
// request through on another rule's word, so that it is seen and fixed. Conditions are
// compiled and type-checked when the rules are built (NewRules).
type Rules struct {
	env   *condition.Env
	rules []compiledRule
}

type compiledRule struct {
	name string
	prg  *condition.Program
}

// Place is the name the receivers' conditions are declared under (errors, logs).
const Place = "receiver authorization"

// NewRules compiles rules against Vars; opts are the condition environment's limits
// (condition.WithCostLimit, condition.WithDeadline). The error of a condition that
// does not compile is a *condition.CompileError naming its file, line and field.
func NewRules(rules []Rule, opts ...condition.Option) (*Rules, error) {
	env, err := condition.NewEnv(Place, Vars(), opts...)
	if err != nil {
		return nil, err
	}
	out := &Rules{env: env}
	seen := map[string]bool{}
	for i, r := range rules {
		where := r.Source
		if where.Field == "" {
			where.Field = fmt.Sprintf("rules[%d]", i)
		}
		switch {
		case r.Name == "":
			return nil, fmt.Errorf("%s: a rule needs a name", where)
		case seen[r.Name]:
			return nil, fmt.Errorf("%s: two rules named %q", where, r.Name)
		case r.Allow == "":
			return nil, fmt.Errorf("%s: rule %q needs an allow condition", where, r.Name)
		}
		seen[r.Name] = true
		prg, err := env.Compile(r.Source, r.Allow, condition.Bool)
		if err != nil {
			return nil, err
		}
		out.rules = append(out.rules, compiledRule{name: r.Name, prg: prg})
	}
	return out, nil
}

// Decide asks the rules in order.
func (rs *Rules) Decide(ctx context.Context, r *Request) (Decision, error) {
	vars := condition.Vars{
		"sender":              r.Sender,
		"sender_trust_domain": r.SenderTrustDomain,
		"proof":               r.Proof,
		"initiator":           r.Initiator,
		"initiator_proved":    r.InitiatorProved,
		"dialog":              r.Dialog,
		"linked_from":         r.LinkedFrom,
		"txn":                 txnVar(r.Txn),
		"method":              r.Method,
		"path":                r.Path,
		"protocol":            r.Protocol,
		"operation":           r.Operation,
		"name":                r.Name,
	}
	// One Input for every rule asked: the variables adapted once, one deadline.
	in := rs.env.NewInput(ctx, vars)
	defer in.Close()
	for _, rule := range rs.rules {
		ok, err := rule.prg.BoolInput(in)
		if err != nil {
			return Decision{Rule: rule.name, Reason: err.Error()}, err
		}
		if ok {
			return Decision{Allow: true, Rule: rule.name}, nil
		}
	}
	return Decision{Reason: "no rule allows the request"}, nil
}

// txnVar is txn's value: the claims, or an empty map without a Txn-Token, so that
// has(txn.sub) is false rather than an error.
func txnVar(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
