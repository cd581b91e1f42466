package demo

import "slices"

// roles says what each party of the demo does, in plain words, in the order the
// picture shows them (domain A's first).
var roles = []struct{ name, role string }{
	{"A1", "agent in domain A that starts the work (dialog D1) and, for a user signed in at the identity provider, links dialog D3 with B1"},
	{"A2", "agent in domain A that works for A1 and hands part of the work on"},
	{"tool", "a tool in domain A that A2 calls for A1"},
	{"WIT issuer A", "gives domain A's workloads their identity (WITs)"},
	{"TTS A", "domain A's Txn-Token service: issues Txn-Tokens for domain A"},
	{"AS A", "domain A's authorization server (the same service as TTS A): vouches for A2 to domain B with a grant, and for A1's user with an ID-JAG"},
	{"B1", "agent in domain B that takes over part of the work (dialog D2) and answers A1 in D3"},
	{"WIT issuer B", "gives domain B's workloads their identity (WITs)"},
	{"TTS B", "domain B's Txn-Token service: issues Txn-Tokens for domain B"},
	{"AS B", "domain B's authorization server (the same service as TTS B): turns domain A's grants (the JWT grant, the ID-JAG) into domain-B access tokens"},
}

// report fills in the report's domains, participants and hops from what the run set
// up and what the wire observer saw; it runs when the flow ends, however it ended.
func (f *flow) report() {
	r := f.p.r
	if f.ds == nil {
		r.Domains, r.Participants, r.Hops = []DomainReport{}, []Participant{}, []Hop{}
		return
	}
	r.Domains = []DomainReport{{f.a.Name, f.a.WITIssuer, f.a.TTS}, {f.b.Name, f.b.WITIssuer, f.b.TTS}}
	ids := map[string]Participant{
		"WIT issuer A": {Domain: f.a.Name, ID: f.a.WITIssuer},
		"TTS A":        {Domain: f.a.Name, ID: f.a.TTS},
		"AS A":         {Domain: f.a.Name, ID: f.a.TTS},
		"WIT issuer B": {Domain: f.b.Name, ID: f.b.WITIssuer},
		"TTS B":        {Domain: f.b.Name, ID: f.b.TTS},
		"AS B":         {Domain: f.b.Name, ID: f.b.TTS},
	}
	for _, wl := range []workload{f.a1, f.a2, f.t1, f.b1} {
		if wl.name != "" {
			ids[wl.name] = Participant{Domain: wl.domain, ID: wl.id.String()}
		}
	}
	domain := func(name string) string { return ids[name].Domain }
	r.Hops = f.wire.hops(domain)
	// The participants are those the hops name, in the order of roles; a party
	// without a role (a host the demo does not know) comes last.
	var names []string
	for _, h := range r.Hops {
		for _, n := range []string{h.From, h.To} {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	r.Participants = []Participant{}
	for _, ro := range roles {
		if slices.Contains(names, ro.name) {
			p := ids[ro.name]
			p.Name, p.Role = ro.name, ro.role
			r.Participants = append(r.Participants, p)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(roles, func(ro struct{ name, role string }) bool { return ro.name == n }) {
			r.Participants = append(r.Participants, Participant{Name: n, Domain: domain(n), ID: n, Role: "a host the demo does not know"})
		}
	}
}
