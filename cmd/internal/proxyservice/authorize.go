package proxyservice

import (
	"fmt"
	"log/slog"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/condition"
)

// AuthorizeRule is one allow rule of the ingress (ingress.authorize, issue 25): its
// name, logged with each decision it makes, and a CEL condition over what the ingress
// verified (authz.Vars: sender, sender_trust_domain, proof, initiator,
// initiator_proved, dialog, linked_from, txn, method, path, protocol, operation, name).
type AuthorizeRule struct {
	Name  string   `yaml:"name"`
	Allow kit.Expr `yaml:"allow"`
}

// SetSource keeps the file the configuration was read from (kit.SourceSetter), so
// that a condition that does not compile is named by file and line.
func (c *Config) SetSource(s kit.Source) { c.source = s }

// ingressRules compiles ingress.authorize (nil without rules): -check-config and the
// start both type-check every condition, naming the file, line and field of the first
// that does not compile.
func ingressRules(cfg *Config) (*authz.Rules, error) {
	in := cfg.Ingress
	if in == nil || in.Authorize == nil {
		return nil, nil
	}
	if len(in.Authorize) == 0 {
		return nil, fmt.Errorf("ingress.authorize: an empty list would refuse every request; leave it out to authorize none")
	}
	rules := make([]authz.Rule, len(in.Authorize))
	for i, r := range in.Authorize {
		rules[i] = authz.Rule{Name: r.Name, Allow: r.Allow.Text, Source: condition.Source{
			File: cfg.source.File, Line: r.Allow.Line, Column: r.Allow.Column,
			Field: fmt.Sprintf("ingress.authorize[%d].allow", i)}}
	}
	return authz.NewRules(rules)
}

// ingressAuthorizer is the decision point of the ingress's receiver
// (dialog.WithAuthorizer): the allow rules, and every other decision point
// configured, all of which must allow (authz.All); each decision logged on logger
// with its rule and reason (authz.Logged). nil when none is configured: every request
// that verifies goes on.
func ingressAuthorizer(cfg *Config, logger *slog.Logger) (authz.Decider, error) {
	var ds []authz.Decider
	rules, err := ingressRules(cfg)
	if err != nil {
		return nil, err
	}
	if rules != nil {
		ds = append(ds, rules)
	}
	pdp, err := openIngressDecider(cfg.Ingress)
	if err != nil {
		return nil, err
	}
	if pdp != nil {
		ds = append(ds, pdp)
	}
	if len(ds) == 0 {
		return nil, nil
	}
	d := ds[0]
	if len(ds) > 1 {
		d = authz.All(ds...)
	}
	return authz.Logged(d, logger.With("side", "ingress")), nil
}
