package proxyservice

import (
	"errors"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// errIngressAuthZENNotEnforced refuses an ingress.authzen section while this build has
// no enforcement point at the ingress to hand the Decider to: a configured decision
// point that nobody asks would let every request through. (The receiver's
// authorization hook, dialog.WithAuthorizer, comes with issue 25's receiver work; when
// it is there, buildIngress appends dialog.WithAuthorizer(d) instead.)
var errIngressAuthZENNotEnforced = errors.New("ingress.authzen: this build has no enforcement point at the ingress yet; remove the section")

// ingressDecider opens the ingress.authzen section's PDP as the authz.Decider the
// ingress asks about every verified request (authzen.RequestFor is the mapping), or
// nil without the section.
func ingressDecider(in *IngressConfig) (authz.Decider, error) {
	d, err := openIngressDecider(in)
	if err != nil || d == nil {
		return d, err
	}
	return nil, errIngressAuthZENNotEnforced
}

// openIngressDecider opens the section's client as an authz.Decider.
func openIngressDecider(in *IngressConfig) (authz.Decider, error) {
	if in.AuthZEN == nil {
		return nil, nil
	}
	cl, err := kit.OpenAuthZEN("ingress.authzen", in.AuthZEN, nil)
	if err != nil {
		return nil, err
	}
	return authzen.Decider{Client: cl}, nil
}
