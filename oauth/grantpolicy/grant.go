package grantpolicy

// condGrant is grant, at a chaining server only (issue 28): the identity-chaining
// grant a request is about. At AS A it is the grant the request asks for, as it would
// be issued (typ by requested_token_type, aud the peer, client_id and resource for an
// ID-JAG); at AS B it is the grant presented, verified (its typ header and claims).
// id_jag says the grant is an Identity Assertion JWT Authorization Grant
// (draft-ietf-oauth-identity-assertion-authz-grant, typ oauth-id-jag+jwt).
type condGrant struct {
	Typ      string   `cel:"typ"`
	IDJAG    bool     `cel:"id_jag"`
	ClientID string   `cel:"client_id"`
	Aud      []string `cel:"aud"`
	Resource []string `cel:"resource"`
}

// Grant is what a chaining server's expressions see of the grant (grant).
type Grant struct {
	// Typ is the grant's JWT typ (oauth-id-jag+jwt, txn-chain+jwt, or ""
	// for an untyped grant a peer allows).
	Typ string
	// IDJAG says the grant is an ID-JAG.
	IDJAG bool
	// ClientID is the grant's client_id ("" when it names none: the generic grant).
	ClientID string
	// Aud and Resource are the grant's aud and resource claims (empty when none).
	Aud, Resource []string
}

// cond is grant as the expressions read it.
func (g Grant) cond() condGrant {
	return condGrant{Typ: g.Typ, IDJAG: g.IDJAG, ClientID: g.ClientID, Aud: nonNil(g.Aud), Resource: nonNil(g.Resource)}
}
