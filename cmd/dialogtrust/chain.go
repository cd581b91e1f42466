package main

import (
	"io"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/proof"
)

// chainGrant: dialogtrust chain grant. It discovers AS A (the TTS of the workload's
// domain) at --tts, presents the Txn-Token as the subject of a token exchange for the
// peer AS named by --audience, authenticating with the WIT and a proof made with --key,
// and prints the JWT authorization grant (oauth.md 2.1 step 2, 2.2).
func chainGrant(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("chain grant", stderr)
	ttsURL := fs.String("tts", "", "AS A: the TTS's base URL (its issuer identifier)")
	w := addWorkloadFlags(fs, proof.HTTPSig)
	txnArg := fs.String("txn-token", "", "the Txn-Token, the grant's subject (value, @file or -)")
	audience := fs.String("audience", "", "the peer AS B's issuer identifier (or a name AS A knows it by)")
	scope := fs.String("scope", "", "space-separated scope (default: the Txn-Token's, as far as it may cross)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := requiredInOrder("tts", *ttsURL, "wit", *w.wit, "key", *w.key, "txn-token", *txnArg, "audience", *audience); err != nil {
		return err
	}
	if err := baseURL("tts", *ttsURL); err != nil {
		return err
	}
	cred, err := w.read(fs, stdin)
	if err != nil {
		return err
	}
	txn, err := readValue(*txnArg, stdin)
	if err != nil {
		return err
	}
	ctx, cancel, hc := w.exchange()
	defer cancel()
	md, err := ttsMetadata(ctx, hc, *ttsURL)
	if err != nil {
		return err
	}
	c := &chaining.Client{HTTPClient: hc, WIT: cred.wit, Key: cred.key, Proof: cred.proof}
	resp, err := c.Grant(ctx, chaining.GrantParams{TokenEndpoint: md.TokenEndpoint, TxnToken: txn, Audience: *audience, Scope: *scope})
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, resp.AccessToken+"\n")
	return err
}

// chainRedeem: dialogtrust chain redeem. It presents a JWT authorization grant at the
// peer AS B's token endpoint (RFC 7523 jwt-bearer), authenticating with the WIT and a
// proof made with --key (the key the grant's requested_cnf names), and prints the
// peer's access token (oauth.md 2.1 step 3, 2.3).
func chainRedeem(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("chain redeem", stderr)
	endpoint := fs.String("token-endpoint", "", "AS B's token endpoint URL")
	w := addWorkloadFlags(fs, proof.HTTPSig)
	grantArg := fs.String("grant", "", "the JWT authorization grant from AS A (value, @file or -)")
	scope := fs.String("scope", "", "space-separated scope (default: the grant's, as far as AS B admits it)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := requiredInOrder("token-endpoint", *endpoint, "wit", *w.wit, "key", *w.key, "grant", *grantArg); err != nil {
		return err
	}
	if err := baseURL("token-endpoint", *endpoint); err != nil {
		return err
	}
	cred, err := w.read(fs, stdin)
	if err != nil {
		return err
	}
	grant, err := readValue(*grantArg, stdin)
	if err != nil {
		return err
	}
	ctx, cancel, hc := w.exchange()
	defer cancel()
	c := &chaining.Client{HTTPClient: hc, WIT: cred.wit, Key: cred.key, Proof: cred.proof}
	resp, err := c.Redeem(ctx, *endpoint, grant, *scope)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, resp.AccessToken+"\n")
	return err
}

// requiredInOrder is required with the flags checked in the order given, so that the
// first missing one is always the one named.
func requiredInOrder(nameValues ...string) error {
	for i := 0; i+1 < len(nameValues); i += 2 {
		if nameValues[i+1] == "" {
			return usageError{"--" + nameValues[i] + " is required"}
		}
	}
	return nil
}
