package ttsservice

import (
	"context"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// domainAYAML is the configuration of a development TTS of a.example listening at addr:
// it trusts da's WITs and issues Txn-Tokens to every a.example workload for self_signed
// subject tokens. Tests append their own sections.
func domainAYAML(da *witDomain, addr string) string {
	return `development: true
listen: ` + addr + `
trust_domains: [a.example]
wits:
  - {trust_domain: a.example, jwks_file: ` + da.file + `}
subject_tokens:
  self_signed: {enabled: true}
policy:
  rules:
    - workload: "wimse://a.example/"
`
}

// selfSignedTxn asks the token endpoint of the TTS iss for an a.example Txn-Token for
// scope in dialog (none when empty): the workload (id, key, witToken) authenticates with
// a WPT and presents a self_signed subject token for alice@a.example made for iss.
func selfSignedTxn(ctx context.Context, id identifier.ID, key *keys.PrivateKey, witToken, iss, tokenEndpoint, scope, dialog string) (*oauth.TokenResponse, error) {
	ss, err := txntoken.NewSelfSignedToken(key, id, "alice@a.example", iss, scope, 5*time.Minute, time.Now())
	if err != nil {
		return nil, err
	}
	return (&txntoken.Client{TokenEndpoint: tokenEndpoint, WIT: witToken, Key: key, Proof: proof.WPT}).Request(ctx,
		txntoken.Request{Audience: "a.example", Scope: scope, SubjectToken: ss, SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: dialog})
}
