package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// idjagUser is the user A1 works for, signed in at domain A's identity provider.
const idjagUser = "alice@a.example"

// linkByIDJAG is step 8 (issue 28): the ID-JAG path across the boundary. Domain A's
// identity provider issued A1 an ID token for the user (the sign-in itself is not
// played); AS A exchanges it for an ID-JAG for AS B
// (draft-ietf-oauth-identity-assertion-authz-grant section 4.3), AS B redeems the
// ID-JAG for a domain-B access token (section 4.4), and A1 starts the linked dialog D3
// with B1, which gets a Txn-Token of domain B recording D3 from TTS B. Against
// deployed services the demo signs the ID token with the provider's key
// (Domain.IdPKeyFile, which deploy/local/up.sh makes); without one the step is skipped.
func (f *flow) linkByIDJAG(ctx context.Context) error {
	p, a1, b := f.p, f.a1, f.b
	p.stepf("a user signed in at domain A's identity provider reached B1 through an ID-JAG: AS A turned the provider's ID token into an identity assertion grant for AS B only, AS B into its own access token, and B1 got a Txn-Token of domain B for the new dialog D3; the ID token stayed in domain A.",
		"A1, for a user signed in at domain A's identity provider, links dialog D3 with B1 through an ID-JAG")
	if f.ds.idp == nil {
		p.skip("the ID-JAG path", "no identity provider key for domain A (DIALOGTRUST_LOCAL_A_IDP and DIALOGTRUST_LOCAL_A_IDP_KEY); the in-process demo runs it")
		return nil
	}
	idToken, err := f.ds.idp.idToken(a1.id, idjagUser)
	if !p.check(err == nil, "the identity provider issued an ID token to A1 (aud) for the user", err) {
		return fmt.Errorf("ID token: %w", err)
	}
	f.idToken = idToken
	p.info("identity provider %s, user %s", f.ds.idp.issuer(), idjagUser)
	linker := &agent.Linker{Self: a1.id, Transport: transport(a1, nil, f.witsAB), Tokens: &chaining.Client{HTTPClient: a1.hc}}
	req := a2aPost(f.b1Srv.URL + "/a2a")
	linked, err := linker.Link(ctx, agent.LinkConfig{
		IDToken: idToken, GrantEndpoint: f.mdA.TokenEndpoint, PeerIssuer: b.TTS, PeerTokenEndpoint: f.mdB.TokenEndpoint, PeerTrustDomain: b.Name,
		Scope: "trip.read", Request: req,
		// An A2A message without a handoff: A1 asks, it hands no work over.
		Body: func(string, string) ([]byte, error) {
			return []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","parts":[{"kind":"text","text":"show my bookings"}],"messageId":"m3"}}}`), nil
		},
	})
	if !p.check(err == nil, "AS A issued an ID-JAG for AS B on the ID token; AS B redeemed it for a domain-B access token; B1 answered D3's first request", err) {
		return fmt.Errorf("linked dialog through an ID-JAG failed: %v", err)
	}
	f.linkedJAG = linked
	ev := <-f.atB1
	p.info("D3 = %s", linked.Dialog.DLG())
	p.check(ev.v != nil && ev.v.Sender.Equal(a1.id) && ev.v.Outcome == dialog.Established && ev.v.Context.Initiator().Equal(a1.id),
		"B1: the request was signed by A1, and B1 created D3 with A1 as initiator")
	if !p.check(ev.acc != nil, "B1: the access token verified (AS B's, bound to A1's WIT key) and TTS B issued a Txn-Token for D3", ev.err) {
		return nil
	}
	at := ev.acc.AccessToken
	p.check(at.ClientID == a1.id.String() && at.Sub == "a.example:"+idjagUser,
		"the access token is A1's (client_id) for the user the ID token named, as AS B maps domain A's subjects", at.ClientID, at.Sub)
	claims, err := txntoken.NewVerifier(f.ttsBKeys, b.Name).Verify(ctx, ev.acc.TxnToken.AccessToken)
	p.check(err == nil && claims.Dialog() == linked.Dialog.DLG() && claims.Sub == at.Sub,
		"the domain-B Txn-Token verifies through TTS B's JWKS, records D3 in tctx.dlg and is for the same user", err)
	if err == nil {
		p.info("sub %q, scope %q, req_wl %s", claims.Sub, claims.Scope, claims.ReqWL)
	}
	return nil
}

// keyIdP is an identity provider of a deployed domain A that runs no server: its
// issuer identifier and private key (deploy/local/up.sh makes the key; TTS A trusts
// the public half). The demo signs the ID token of step 8 as that provider would.
type keyIdP struct {
	iss string
	key *keys.PrivateKey
}

// loadKeyIdP reads the provider's private JWK (a few hundred bytes; bounded).
func loadKeyIdP(issuer, path string) (keyIdP, error) {
	f, err := os.Open(path)
	if err != nil {
		return keyIdP{}, fmt.Errorf("identity provider key: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return keyIdP{}, fmt.Errorf("identity provider key: %w", err)
	}
	k, err := keys.ParsePrivateJWK(b)
	if err != nil {
		return keyIdP{}, fmt.Errorf("identity provider key %s: %w", path, err)
	}
	return keyIdP{iss: issuer, key: k}, nil
}

func (p keyIdP) issuer() string { return p.iss }

// idToken is an OpenID Connect ID token (typ JWT) of user issued to client, valid for
// five minutes.
func (p keyIdP) idToken(client identifier.ID, user string) (string, error) {
	now := time.Now()
	return jose.SignClaims("JWT", p.key, true, jose.RegisteredClaims{Iss: p.iss, Sub: user, Aud: jose.Audience{client.String()},
		Iat: numericDate(now), Exp: numericDate(now.Add(5 * time.Minute))})
}

func numericDate(t time.Time) *jose.NumericDate {
	n := jose.NumericDate(t.Unix())
	return &n
}
