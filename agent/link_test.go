package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// figure5Run is one run of Figure 5 and what each party saw.
type figure5Run struct {
	d1     string
	txnA   string // A2's domain-A Txn-Token, recording D1
	linked *agent.Linked
	atB1   b1Result
}

// runFigure5 is dialog-binding section 11, Figure 5, across two trust domains:
//
//  0. A1 initiates D1 with A2; A2 holds a domain-A Txn-Token recording D1;
//  1. A2 asks AS A for a JWT authorization grant for AS B, with that Txn-Token;
//  2. A2 redeems the grant at AS B for a domain-B access token;
//  3. A2 starts D2 with B1, itself as initiator, with the access token; B1 verifies
//     A2's WIT (it trusts domain A's WIT issuer) and creates D2;
//  4. B1 exchanges the access token at TTS B for a domain-B Txn-Token recording D2.
func runFigure5(t *testing.T, f *figure5) figure5Run {
	t.Helper()
	atA2 := f.startD1("trip.read trip.book")
	run := figure5Run{d1: atA2.Context.DLG(), txnA: atA2.TxnToken}
	linked, err := f.linker(f.a2).Link(f.ctx, agent.LinkConfig{
		TxnToken: atA2.TxnToken, GrantEndpoint: f.a.TokenEndpoint(), PeerIssuer: f.b.TTSURL, PeerTokenEndpoint: f.b.TokenEndpoint(), PeerTrustDomain: "b.example",
		Scope: "trip.read", Request: f.post(f.b1Srv.URL + "/task"),
	})
	if err != nil {
		t.Fatalf("link: %v", err)
	}
	body, _ := io.ReadAll(linked.Response.Body)
	linked.Response.Body.Close()
	run.linked, run.atB1 = linked, <-f.atB1
	if run.atB1.err != nil || linked.Response.StatusCode != 200 {
		t.Fatalf("at B1: %v (%d %s)", run.atB1.err, linked.Response.StatusCode, body)
	}
	return run
}

// Acceptance: Figure 5 across two trust domains, each with its own WIT issuer and TTS.
func TestDialogBindingFigure5(t *testing.T) {
	f := newFigure5(t)
	run := runFigure5(t, f)
	d2 := run.linked.Dialog
	switch {
	case d2.DLG() == run.d1:
		t.Fatal("D2 reuses D1's identifier")
	case !d2.Initiator().Equal(f.a2.ID):
		t.Fatalf("D2's initiator %s, want A2", d2.Initiator())
	case run.linked.Scope != "trip.read" || run.linked.AccessToken == "":
		t.Fatalf("linked %+v", run.linked)
	}
	// B1 verified A2 (a domain-A workload), proved as D2's initiator, and created D2.
	v := run.atB1.v
	if !v.Sender.Equal(f.a2.ID) || !v.InitiatorVerified || v.Outcome != dialog.Established || v.Context.DLG() != d2.DLG() || v.TxnToken != "" {
		t.Fatalf("at B1: %+v", v)
	}
	// The access token: AS B's, for domain B, bound to A2's WIT key, issued to A2.
	at := run.atB1.acc.AccessToken
	if at.ClientID != f.a2.ID.String() || at.Sub != "a.example:alice@a.example" || at.Scope != "trip.read" || at.Iss != f.b.TTSURL {
		t.Fatalf("access token %+v", at)
	}
	if err := chaining.CheckHolder(at, v.SenderWIT.Key); err != nil {
		t.Fatal(err)
	}
	// B1's domain-B Txn-Token verifies for trust domain b.example and records D2.
	ks, err := keys.NewRemoteSet(f.ctx, f.b.TTSURL+tts.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := txntoken.NewVerifier(ks, "b.example", txntoken.WithIssuer(f.b.TTSURL), txntoken.WithClock(f.clock.Now)).Verify(f.ctx, run.atB1.acc.TxnToken.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Dialog() != d2.DLG() || claims.ReqWL != f.b1.ID.String() || claims.Sub != "a.example:alice@a.example" || claims.Scope != "trip.read" {
		t.Fatalf("domain-B Txn-Token %+v", claims)
	}
	if err := txntoken.DialogMatches(claims, run.d1); errcode.CodeOf(err) != errcode.DialogMismatch {
		t.Fatalf("the domain-B token must not be usable in D1: %v", err)
	}
	// The domain-A Txn-Token is refused in domain B.
	if _, err := txntoken.NewVerifier(ks, "b.example").Verify(f.ctx, run.txnA); err == nil {
		t.Fatal("domain B accepted domain A's Txn-Token")
	}
	// Both TTS binaries say what they serve.
	mdA, err := oauth.Discover(f.ctx, nil, f.a.TTSURL)
	if err != nil || !slices.Contains(mdA.IdentityChainingRequestedTokenTypesSupported, chaining.TokenTypeJWT) {
		t.Fatalf("AS A metadata %+v %v", mdA, err)
	}
	mdB, err := oauth.Discover(f.ctx, nil, f.b.TTSURL)
	if err != nil || !strings.Contains(strings.Join(mdB.GrantTypesSupported, " "), chaining.GrantTypeJWTBearer) {
		t.Fatalf("AS B metadata %+v %v", mdB, err)
	}
}

// Section 13, domain separation: neither the dialog identifier nor the Txn-Token of
// domain A crosses the trust boundary. Every request that reached a server of domain B
// in the whole of Figure 5 (AS B/TTS B, B1, B's WIT issuer) is searched, its target,
// every header field and its body, form-decoded, and inside every JWT it carries
// (header and payload decoded: the grant, the access token, the WITs, the proofs), for
// D1, the domain-A Txn-Token, its signature, and its SHA-256 in base64url, base64 and
// hex.
func TestDialogBindingSec13_DomainSeparation(t *testing.T) {
	f := newFigure5(t)
	run := runFigure5(t, f)
	sum := sha256.Sum256([]byte(run.txnA))
	needles := map[string]string{
		"D1":                       run.d1,
		"the domain-A Txn-Token":   run.txnA,
		"its signature":            run.txnA[strings.LastIndexByte(run.txnA, '.')+1:],
		"its SHA-256 (base64url)":  base64.RawURLEncoding.EncodeToString(sum[:]),
		"its SHA-256 (base64)":     base64.StdEncoding.EncodeToString(sum[:]),
		"its SHA-256 (hex)":        hex.EncodeToString(sum[:]),
		"its SHA-256 (txntoken)":   tokenhash.Of(run.txnA),
		"its txn (transaction id)": txnOf(t, run.txnA),
	}
	jwt := regexp.MustCompile(`[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	var sawGrant, sawAccessTokenAtB1, sawAccessTokenAtTTS bool
	reqs := f.rec.all()
	if len(reqs) < 3 {
		t.Fatalf("only %d requests reached domain B", len(reqs))
	}
	for _, r := range reqs {
		texts := []string{r.target, string(r.body)}
		if u, err := url.QueryUnescape(string(r.body)); err == nil {
			texts = append(texts, u)
		}
		for name, vals := range r.header {
			for _, v := range vals {
				texts = append(texts, name+": "+v)
			}
			if strings.EqualFold(name, txntoken.HeaderName) || strings.EqualFold(name, dialog.ProvenanceHeader) {
				t.Fatalf("%s %s %s carries %s", r.server, r.method, r.target, name)
			}
		}
		for _, s := range append([]string(nil), texts...) {
			for _, tok := range jwt.FindAllString(s, -1) {
				for _, part := range strings.Split(tok, ".")[:2] {
					if b, err := base64.RawURLEncoding.DecodeString(part); err == nil {
						texts = append(texts, string(b))
						switch {
						case strings.Contains(string(b), `"typ":"`+chaining.GrantTyp+`"`) && r.server == "TTS B":
							sawGrant = true
						case strings.Contains(string(b), `"typ":"at+jwt"`) && r.server == "B1":
							sawAccessTokenAtB1 = true
						case strings.Contains(string(b), `"typ":"at+jwt"`) && r.server == "TTS B":
							sawAccessTokenAtTTS = true
						}
					}
				}
			}
		}
		for what, n := range needles {
			for _, s := range texts {
				if strings.Contains(s, n) {
					t.Fatalf("%s %s %s carries %s", r.server, r.method, r.target, what)
				}
			}
		}
	}
	if !sawGrant || !sawAccessTokenAtB1 || !sawAccessTokenAtTTS {
		t.Fatalf("the search did not see what crossed: grant at AS B %v, access token at B1 %v and at TTS B %v", sawGrant, sawAccessTokenAtB1, sawAccessTokenAtTTS)
	}
	// And what crossed is what section 11 says: D2, initiated by A2.
	if got := headersOf(reqs, "B1", dialog.HeaderName); len(got) != 1 || got[0] != run.linked.Dialog.Value() {
		t.Fatalf("B1 received Dialog-Context %q, want D2's %q", got, run.linked.Dialog.Value())
	}
}

func headersOf(reqs []recorded, server, name string) []string {
	var out []string
	for _, r := range reqs {
		if r.server == server {
			out = append(out, r.header.Values(name)...)
		}
	}
	return out
}

func txnOf(t *testing.T, tok string) string {
	t.Helper()
	p, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(p), `"txn":"`)
	if i < 0 {
		t.Fatal("no txn")
	}
	rest := string(p)[i+7:]
	return rest[:strings.IndexByte(rest, '"')]
}

// Section 11 refusals at AS B: a grant redeemed twice (RFC 7523 invalid_grant,
// replayed).
func TestDialogBindingSec11_ReplayedGrant(t *testing.T) {
	f := newFigure5(t)
	atA2 := f.startD1("trip.read trip.book")
	c := f.chainingClient(f.a2)
	g, err := c.Grant(f.ctx, chaining.GrantParams{TokenEndpoint: f.a.TokenEndpoint(), TxnToken: atA2.TxnToken, Audience: f.b.TTSURL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, ""); err != nil {
		t.Fatal(err)
	}
	_, err = c.Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, "")
	wantOAuth(t, err, "invalid_grant", errcode.Replayed)
	// Still refused later, while the grant could be valid, and after it expired.
	f.clock.Advance(30 * time.Second)
	_, err = c.Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, "")
	wantOAuth(t, err, "invalid_grant", errcode.Replayed)
	f.clock.Advance(2 * time.Minute)
	_, err = c.Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, "")
	wantOAuth(t, err, "invalid_grant", errcode.Expired)
}

// A grant AS A issued for another AS (C) is refused at AS B (audience_mismatch).
func TestDialogBindingSec11_GrantForAnotherAudience(t *testing.T) {
	f := newFigure5(t)
	atA2 := f.startD1("trip.read trip.book")
	c := f.chainingClient(f.a2)
	g, err := c.Grant(f.ctx, chaining.GrantParams{TokenEndpoint: f.a.TokenEndpoint(), TxnToken: atA2.TxnToken, Audience: f.c.TTSURL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, "")
	wantOAuth(t, err, "invalid_grant", errcode.AudienceMismatch)
}

// A grant from a domain AS B does not trust for grants (C) is refused
// (untrusted_issuer), although B trusts C's WIT issuer so that C1 authenticates.
func TestDialogBindingSec11_GrantFromUntrustedDomain(t *testing.T) {
	f := newFigure5(t)
	c1 := f.c1
	cred, err := c1.Source.Credential(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := txntoken.NewSelfSignedToken(cred.Key, c1.ID, "carol@c.example", f.c.TTSURL, "trip.read", 5*time.Minute, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	txn, err := (&txntoken.Client{TokenEndpoint: f.c.TokenEndpoint(), WITSource: c1.Source, Now: f.clock.Now, Proof: proof.WPT}).Request(f.ctx,
		txntoken.Request{Audience: "c.example", Scope: "trip.read", SubjectToken: ss, SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: "C-D1"})
	if err != nil {
		t.Fatal(err)
	}
	c := f.chainingClient(c1)
	g, err := c.Grant(f.ctx, chaining.GrantParams{TokenEndpoint: f.c.TokenEndpoint(), TxnToken: txn.AccessToken, Audience: f.b.TTSURL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, "")
	wantOAuth(t, err, "invalid_grant", errcode.UntrustedIssuer)
	// A grant claiming AS A as issuer but signed by AS C's key: not A's key.
	forged := forgeIssuer(t, g.AccessToken, f.a.TTSURL, f.c)
	_, err = c.Redeem(f.ctx, f.b.TokenEndpoint(), forged, "")
	if code := errcode.CodeOf(err); code != errcode.UnknownKey && code != errcode.InvalidSignature {
		t.Fatalf("forged issuer: %v", err)
	}
}

// forgeIssuer re-signs a grant's payload with iss replaced, with d's key (which AS B
// does not trust for that issuer).
func forgeIssuer(t *testing.T, grant, iss string, d *testbed.Domain) string {
	t.Helper()
	parts := strings.Split(grant, ".")
	p, _ := base64.RawURLEncoding.DecodeString(parts[1])
	ps := strings.Replace(string(p), `"iss":"`+d.TTSURL+`"`, `"iss":"`+iss+`"`, 1)
	input := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(ps))
	sig, err := d.TTSKey().Sign([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// A grant presented by another workload than the one AS A issued it to
// (requested_cnf names A2's WIT key; A3 presents it): grant_binding_mismatch.
func TestDialogBindingSec11_GrantPresentedByAnotherWorkload(t *testing.T) {
	f := newFigure5(t)
	atA2 := f.startD1("trip.read trip.book")
	g, err := f.chainingClient(f.a2).Grant(f.ctx, chaining.GrantParams{TokenEndpoint: f.a.TokenEndpoint(), TxnToken: atA2.TxnToken, Audience: f.b.TTSURL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.chainingClient(f.a3).Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, "")
	wantOAuth(t, err, "invalid_grant", errcode.GrantBindingMismatch)
	// The refusal did not use the grant up: A2 still redeems it.
	if _, err := f.chainingClient(f.a2).Redeem(f.ctx, f.b.TokenEndpoint(), g.AccessToken, ""); err != nil {
		t.Fatal(err)
	}
}

// A grant asking for more than the Txn-Token allows is refused at AS A (invalid_scope).
func TestDialogBindingSec11_WiderScopeThanTxnToken(t *testing.T) {
	f := newFigure5(t)
	atA2 := f.startD1("trip.read")
	_, err := f.chainingClient(f.a2).Grant(f.ctx, chaining.GrantParams{TokenEndpoint: f.a.TokenEndpoint(), TxnToken: atA2.TxnToken,
		Audience: f.b.TTSURL, Scope: "trip.read trip.book"})
	wantOAuth(t, err, "invalid_scope", errcode.ScopeTooBroad)
}

// A grant for an AS that AS A has no peer configuration for: invalid_target.
func TestDialogBindingSec11_UnknownPeer(t *testing.T) {
	f := newFigure5(t)
	atA2 := f.startD1("trip.read")
	_, err := f.chainingClient(f.a2).Grant(f.ctx, chaining.GrantParams{TokenEndpoint: f.a.TokenEndpoint(), TxnToken: atA2.TxnToken,
		Audience: "https://as.unknown.example"})
	wantOAuth(t, err, "invalid_target", errcode.UnknownPeer)
}

// The linked dialog's own guards: the linker never reuses D1's identifier or sends a
// domain-A credential; B1 refuses an access token presented by a workload it was not
// issued to, and a linked request without one.
func TestDialogBindingSec11_LinkedDialogRefusals(t *testing.T) {
	f := newFigure5(t)
	atA2 := f.startD1("trip.read trip.book")
	l := f.linker(f.a2)
	cfg := func(dlg string, req *http.Request) agent.LinkConfig {
		return agent.LinkConfig{TxnToken: atA2.TxnToken, GrantEndpoint: f.a.TokenEndpoint(), PeerIssuer: f.b.TTSURL,
			PeerTokenEndpoint: f.b.TokenEndpoint(), PeerTrustDomain: "b.example", Request: req, Dialog: dlg}
	}
	if _, err := l.Link(f.ctx, cfg(atA2.Context.DLG(), f.post(f.b1Srv.URL+"/task"))); errcode.CodeOf(err) != errcode.CrossesTrustBoundary {
		t.Fatalf("D1 reused: %v", err)
	}
	withTxn := f.post(f.b1Srv.URL + "/task")
	withTxn.Header.Set(txntoken.HeaderName, atA2.TxnToken)
	if _, err := l.Link(f.ctx, cfg("", withTxn)); errcode.CodeOf(err) != errcode.CrossesTrustBoundary {
		t.Fatalf("Txn-Token sent to domain B: %v", err)
	}
	// The context of the request A2 handles carries D1's Txn-Token source: not used.
	ctx := agent.WithTxnTokenSource(f.ctx, agent.Forwarded(atA2.TxnToken))
	linked, err := l.Link(ctx, cfg("", f.post(f.b1Srv.URL+"/task")))
	if err != nil {
		t.Fatal(err)
	}
	linked.Response.Body.Close()
	if r := <-f.atB1; r.err != nil || r.v.TxnToken != "" {
		t.Fatalf("at B1: %+v", r)
	}
	// A3 presents A2's access token to B1 in a dialog of its own: not the holder.
	a3t := f.transport(f.a3, nil, f.a, f.b)
	a3t.ResponseSigners = linked.Signers // B1 answers from domain B
	a3 := &agent.Agent{Self: f.a3.ID, Client: &http.Client{Transport: a3t}}
	req := f.post(f.b1Srv.URL + "/task")
	req.Header.Set("Authorization", "Bearer "+linked.AccessToken)
	res, _, err := a3.Start(f.ctx, req, "")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if r := <-f.atB1; errcode.CodeOf(r.err) != errcode.GrantBindingMismatch || res.StatusCode != http.StatusForbidden {
		t.Fatalf("stolen access token: %v %d", r.err, res.StatusCode)
	}
	// A linked request without an access token.
	res, _, err = a3.Start(f.ctx, f.post(f.b1Srv.URL+"/task"), "")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if r := <-f.atB1; errcode.CodeOf(r.err) != errcode.MissingRequiredComponent && errcode.CodeOf(r.err) != errcode.MissingCredential {
		t.Fatalf("no access token: %v", r.err)
	}
	// A WPT transport cannot carry the access token.
	wl := f.linker(f.a2)
	wl.Transport.Proof = proof.WPT
	if _, err := wl.Link(context.Background(), cfg("", f.post(f.b1Srv.URL+"/task"))); errcode.CodeOf(err) != errcode.InvalidRequest {
		t.Fatalf("WPT linker: %v", err)
	}
}
