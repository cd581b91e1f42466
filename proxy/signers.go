package proxy

import (
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// routeSigners are the workloads whose signed responses a route believes
// (Route.ResponseSigners): the ones it names, or by default every workload of the
// route's own trust domain. For an ordinary route that is the egress's: its requests
// carry a Txn-Token and a dialog of this domain, which do not cross a trust boundary
// (section 11). For a route crossing one it is the peer trust domain the linked
// dialog is in (BoundaryRoute.PeerTrustDomain). Named signers are of that domain too:
// never another.
func routeSigners(self identifier.ID, rt Route, prefix string) (*agent.Signers, error) {
	td := self.TrustDomain()
	if rt.Boundary != nil {
		td = rt.Boundary.PeerTrustDomain
		if td == "" {
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a route crossing a trust boundary names the peer trust domain: its responses are believed only from there", prefix)
		}
		if td == self.TrustDomain() {
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: the peer trust domain of a route crossing a trust boundary is not the egress's own", prefix)
		}
	}
	if len(rt.ResponseSigners) == 0 {
		s, err := agent.TrustDomainSigners(td)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "egress route %s", prefix)
		}
		return s, nil
	}
	s, err := agent.ParseSigners(rt.ResponseSigners...)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "egress route %s", prefix)
	}
	if s.TrustDomain() != td {
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: response signers of trust domain %s, but the route's responses come from %s (section 11)", prefix, errcode.Cut(s.TrustDomain()), td)
	}
	return s, nil
}

// CheckRouteSigners checks rt's ResponseSigners and BoundaryRoute.PeerTrustDomain for
// an egress of workload self, as NewEgress does.
func CheckRouteSigners(self identifier.ID, rt Route) error {
	_, err := routeSigners(self, rt, rt.Prefix)
	return err
}
