package proxyservice

import (
	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// openIngressDecider opens the ingress.authzen section's PDP as the authz.Decider the
// ingress asks about every verified request (authzen.RequestFor is the mapping), or
// nil without the section.
func openIngressDecider(in *IngressConfig) (authz.Decider, error) {
	if in == nil || in.AuthZEN == nil {
		return nil, nil
	}
	cl, err := kit.OpenAuthZEN("ingress.authzen", in.AuthZEN, nil)
	if err != nil {
		return nil, err
	}
	return authzen.Decider{Client: cl}, nil
}
