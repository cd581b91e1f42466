package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// steps is the number of numbered steps, for the progress line.
const steps = 9

// printer records the steps and checks of a run into its Report.
type printer struct {
	r *Report
	// now is the clock of the step timers (time.Now): they measure how long each step
	// really took, whatever clock the credentials are checked against.
	now       func() time.Time
	stepStart time.Time
	mu        sync.Mutex // guards r.Steps' length, which the wire observer reads
}

// stepf begins the next step: its title, and its claim (what it shows, in plain
// words, when all its checks pass).
func (p *printer) stepf(claim, format string, args ...any) {
	p.endStep()
	p.mu.Lock()
	p.r.Steps = append(p.r.Steps, Step{N: len(p.r.Steps) + 1, Title: fmt.Sprintf(format, args...), Claim: claim})
	p.mu.Unlock()
	p.stepStart = p.now()
}

// current is the number of the step running now (0 before the first).
func (p *printer) current() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.r.Steps)
}

// endStep records how long the step begun last took, once.
func (p *printer) endStep() {
	if p.stepStart.IsZero() {
		return
	}
	p.r.Steps[len(p.r.Steps)-1].Duration = p.now().Sub(p.stepStart)
	p.stepStart = time.Time{}
}

func (p *printer) info(format string, args ...any) {
	if st := p.current(); st > 0 {
		p.r.Steps[st-1].Info = append(p.r.Steps[st-1].Info, fmt.Sprintf(format, args...))
	}
}

// check records one check; it returns ok so callers can stop when a later step needs
// it. detail is what explains a failure: the first error in it gives the check's code.
func (p *printer) check(ok bool, what string, detail ...any) bool {
	c := Check{Step: p.current(), Name: what, Result: Passed}
	if ok {
		p.r.Passed++
	} else {
		p.r.Failed++
		c.Result = Failed
		var parts []string
		for _, d := range detail {
			switch d := d.(type) {
			case nil:
			case error:
				if c.Code == "" {
					c.Code = string(errcode.CodeOf(d))
				}
				parts = append(parts, d.Error())
			default:
				if v := reflect.ValueOf(d); (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
					continue
				}
				parts = append(parts, fmt.Sprint(d))
			}
		}
		c.Detail = strings.Join(parts, "; ")
	}
	p.r.Checks = append(p.r.Checks, c)
	return ok
}

// skip records a check that cannot be made here, and why; it is counted apart, never
// as passed.
func (p *printer) skip(what, why string) {
	p.r.Skipped++
	p.r.Checks = append(p.r.Checks, Check{Step: p.current(), Name: what, Result: Skipped, Detail: why})
}

// Run runs the demo with both trust domains in this process (InProcess) and writes
// what happens to w as text. It returns an error when any check failed or a step could
// not run.
func Run(ctx context.Context, w io.Writer) error { return RunTopology(ctx, w, InProcess()) }

// RunTopology runs the demo against topo (Execute) and writes its report to w as
// text (WriteText).
func RunTopology(ctx context.Context, w io.Writer, topo Topology) error {
	r, err := Execute(ctx, topo)
	if werr := WriteText(w, r); werr != nil && err == nil {
		err = werr
	}
	return err
}

// Execute runs the demo against the trust domains of topo: the same flow and the same
// checks whether the WIT issuers and TTSs run in this process or were deployed
// (External, LocalTopology). The workloads (A1, A2, the tool and B1) always run in this
// process, on loopback. Checks that need to see inside a deployed service and cannot
// are recorded as skipped, with the reason. The Report is complete even when the run
// failed; the error says that it did (a check failed, or a step could not run).
func Execute(ctx context.Context, topo Topology) (*Report, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	r := &Report{Checks: []Check{}, Steps: []Step{}, Glossary: glossary()}
	_, r.Deployed = topo.(external)
	if r.Deployed {
		r.Title = "dialogtrust demo: agents hand work across two trust domains, against deployed services, every credential real"
	} else {
		r.Title = "dialogtrust demo: agents hand work across two trust domains, on loopback, every credential real"
	}
	p := &printer{r: r, now: time.Now}
	err := run(ctx, p, topo)
	p.endStep()
	if err != nil {
		r.Error = err.Error()
		if code := errcode.CodeOf(err); code != errcode.Unmapped {
			r.ErrorCode = string(code)
		}
	}
	r.summarize()
	if err != nil {
		return r, err
	}
	if r.Failed > 0 {
		return r, fmt.Errorf("%d checks failed", r.Failed)
	}
	return r, nil
}

// run is the flow of Figure 5, step by step; a step that cannot go on returns an error
// and ends it, after the checks printed so far.
func run(ctx context.Context, p *printer, topo Topology) error {
	f := &flow{p: p, topo: topo, rec: &recorder{}, wire: &wire{step: p.current}}
	defer f.close()
	defer f.report()
	for _, step := range []func(context.Context) error{
		f.startDomains,    // step 1
		f.getWITs,         // step 2
		f.startServers,    // A2, the tool and B1 as servers
		f.startD1,         // step 3
		f.callTool,        // step 4
		f.handOff,         // step 5
		f.checkB1TxnToken, // step 6
		f.collectStatuses, // step 7
		f.linkByIDJAG,     // step 8
		f.checkSeparation, // step 9
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// flow is one run of the demo: what each step sets up for the later ones.
type flow struct {
	p    *printer
	topo Topology
	// rec records everything that reaches domain B, for the domain-separation check:
	// by the servers themselves when they run here, else as the workloads send it.
	rec *recorder
	// wire sees every call of the workloads, for the hops of the report.
	wire *wire
	ds   *domains
	a, b Domain
	// hc carries every HTTP request of the demo's workloads.
	hc      *http.Client
	servers []*server

	mdA, mdB       *oauth.Metadata
	witMD          map[string]*witissuer.Metadata
	a1, a2, t1, b1 workload
	witsA, witsAB  *wit.Validator
	ttsBKeys       *keys.LazyRemoteSet

	a2Srv, toolSrv, b1Srv *server
	atA2, atTool          chan *dialog.Verified
	atB1                  chan b1Event
	a2HK                  *keys.PrivateKey
	htrust                *handoff.StaticTrust

	d1        *dialog.Context  // D1, as A1 started it
	atA2First *dialog.Verified // what A2 verified of D1's first request
	delegator *handoff.Delegator
	offer     *handoff.Handoff
	linked    *agent.Linked // D2, as A2 linked it
	b1First   b1Event       // what B1 made of D2's first request
	idToken   string        // A1's ID token of step 8 ("" when the step did not get one)
	linkedJAG *agent.Linked // D3, as A1 linked it through an ID-JAG
}

// close releases what the steps started, the last first.
func (f *flow) close() {
	for _, l := range []*agent.Linked{f.linked, f.linkedJAG} {
		if l != nil {
			l.Response.Body.Close()
		}
	}
	for _, s := range f.servers {
		s.close()
	}
	if f.ds != nil {
		f.ds.close()
	}
}

// startDomains is step 1: the two trust domains, ready, with their metadata.
func (f *flow) startDomains(ctx context.Context) error {
	p := f.p
	claim := "each trust domain runs its own WIT issuer and its own TTS, which is also the domain's authorization server (AS), and they answer."
	if _, ok := f.topo.(external); ok {
		p.stepf(claim, "Using the deployed trust domains: a WIT issuer and a TTS (with its authorization server) each")
	} else {
		p.stepf(claim, "Starting trust domains a.example and b.example: a WIT issuer and a TTS (with its authorization server) each")
	}
	ds, err := f.topo.start(ctx, f.rec.wrap)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		d      Domain
		letter string
	}{{ds.a, "A"}, {ds.b, "B"}} {
		f.wire.addHost(d.d.WITIssuer, endpoint{kind: kindWITIssuer, name: kindWITIssuer + " " + d.letter, letter: d.letter})
		f.wire.addHost(d.d.TTS, endpoint{kind: kindTTS, name: kindTTS + " " + d.letter, letter: d.letter})
	}
	f.ds, f.a, f.b = ds, ds.a, ds.b
	a, b := f.a, f.b
	if !ds.serverSide {
		for _, u := range []string{b.WITIssuer, b.TTS} {
			if err := f.rec.watchURL(u); err != nil {
				return err
			}
		}
	}
	f.hc = &http.Client{Transport: f.rec.transport(http.DefaultTransport), Timeout: 30 * time.Second}
	p.info("%s: WIT issuer %s   TTS/AS A %s", a.Name, a.WITIssuer, a.TTS)
	p.info("%s: WIT issuer %s   TTS/AS B %s", b.Name, b.WITIssuer, b.TTS)
	for _, u := range []string{a.WITIssuer, a.TTS, b.WITIssuer, b.TTS} {
		code, err := getStatus(ctx, f.hc, u+tts.PathReadyz)
		p.check(err == nil && code == http.StatusOK, "ready: "+u, code, err)
	}
	return f.discover(ctx)
}

// discover reads the metadata of both TTSs and both WIT issuers.
func (f *flow) discover(ctx context.Context) error {
	p, a, b := f.p, f.a, f.b
	var err error
	f.mdA, err = oauth.Discover(ctx, f.hc, a.TTS)
	if !p.check(err == nil && slices.Contains(f.mdA.IdentityChainingRequestedTokenTypesSupported, chaining.TokenTypeJWT),
		"TTS A's metadata names it as issuer and offers identity-chaining grants (AS A)", err) {
		return fmt.Errorf("TTS A at %s does not issue identity-chaining grants", a.TTS)
	}
	f.mdB, err = oauth.Discover(ctx, f.hc, b.TTS)
	if !p.check(err == nil && slices.Contains(f.mdB.GrantTypesSupported, chaining.GrantTypeJWTBearer),
		"TTS B's metadata names it as issuer and offers the jwt-bearer grant (AS B)", err) {
		return fmt.Errorf("TTS B at %s does not redeem grants", b.TTS)
	}
	f.witMD = map[string]*witissuer.Metadata{}
	for _, d := range []Domain{a, b} {
		md, err := witissuer.Discover(ctx, f.hc, d.WITIssuer)
		if !p.check(err == nil, "WIT issuer metadata of "+d.Name+" (issuance endpoint and JWKS on its own origin)", err) {
			return fmt.Errorf("WIT issuer of %s: %w", d.Name, err)
		}
		f.witMD[d.Name] = md
	}
	return nil
}

// getWITs is step 2: the workloads and their WITs.
func (f *flow) getWITs(ctx context.Context) error {
	p, a, b := f.p, f.a, f.b
	p.stepf("every workload got its identity, a WIT, from its own domain's issuer, and anyone can check that WIT with the issuer's public keys.",
		"Workloads get their WITs from their domain's issuer (a fresh key each)")
	var wls []workload
	for _, w := range []struct {
		d               Domain
		name, path, alg string
	}{{a, "A1", "/agent/a1", keys.EdDSA}, {a, "A2", "/agent/a2", keys.ES256}, {a, "tool", "/tool/search", keys.EdDSA}, {b, "B1", "/agent/b1", keys.ES256}} {
		wl, err := newWorkload(w.d, f.witMD[w.d.Name], w.name, w.path, w.alg, f.wire.client(w.name, f.hc))
		if err != nil {
			return err
		}
		wls = append(wls, wl)
	}
	f.a1, f.a2, f.t1, f.b1 = wls[0], wls[1], wls[2], wls[3]
	f.witsA, f.witsAB = witValidator(ctx, f.hc, a), witValidator(ctx, f.hc, a, b)
	for _, wl := range wls {
		cred, err := wl.src.Credential(ctx)
		if err != nil {
			return fmt.Errorf("WIT for %s: %w", wl.id, err)
		}
		v, err := f.witsAB.Validate(ctx, cred.WIT)
		p.check(err == nil && v.Subject.Equal(wl.id), fmt.Sprintf("WIT of %s verifies through its issuer's JWKS (%s key)", wl.id, cred.Key.Alg()), err)
	}
	return nil
}

// startServers starts the participants that are servers: A2 and the tool in domain A,
// B1 (with its handoff receiver and the acceptor of linked dialogs) in domain B.
func (f *flow) startServers(ctx context.Context) error {
	a, b := f.a, f.b
	ttsAKeys := keys.NewLazyRemoteSet(ctx, f.mdA.JWKSURI, 100*time.Millisecond, time.Now, keys.WithHTTPClient(f.hc))
	f.ttsBKeys = keys.NewLazyRemoteSet(ctx, f.mdB.JWKSURI, 100*time.Millisecond, time.Now, keys.WithHTTPClient(f.hc))
	f.atA2, f.atTool = make(chan *dialog.Verified, 4), make(chan *dialog.Verified, 4)
	for _, s := range []**server{&f.a2Srv, &f.toolSrv, &f.b1Srv} {
		srv, err := listen()
		if err != nil {
			return err
		}
		*s = srv
		f.servers = append(f.servers, srv)
	}
	f.wire.addHost(f.a2Srv.URL, endpoint{name: f.a2.name})
	f.wire.addHost(f.toolSrv.URL, endpoint{name: f.t1.name})
	f.wire.addHost(f.b1Srv.URL, endpoint{name: f.b1.name})
	atA2, atTool := f.atA2, f.atTool
	f.a2Srv.serve(receiver(f.a2Srv.URL+"/task", f.a2, f.witsA, txntoken.NewVerifier(ttsAKeys, a.Name), true, nil).Middleware(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { atA2 <- dialog.FromRequest(r); okJSON(w) })))
	f.toolSrv.serve(receiver(f.toolSrv.URL+"/invoke", f.t1, f.witsA, txntoken.NewVerifier(ttsAKeys, a.Name), false, nil).Middleware(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { atTool <- dialog.FromRequest(r); okJSON(w) })))

	// Handoff keys: the AgentIds are the workload identifiers.
	f.a2HK, _ = keys.Generate(keys.ES256)
	b1HK, _ := keys.Generate(keys.ES256)
	f.htrust = handoff.NewStaticTrust()
	_ = f.htrust.Bind(f.a2.id.String(), f.a2HK.Public())
	_ = f.htrust.Bind(f.b1.id.String(), b1HK.Public())
	// The handoff keys were made just above, with these records: no offer can predate
	// them, so nothing was lost (section 8.4 does not apply).
	b1Handoffs := handoff.NewReceiver(f.b1.id.String(), f.htrust, store.NewMemoryRecords(), handoff.WithStatusKey(b1HK), handoff.WithGrantRequired(),
		handoff.WithRecordsLostAt(time.Time{}))
	acceptor := &agent.LinkAcceptor{
		TTS:          &txntoken.Client{TokenEndpoint: f.mdB.TokenEndpoint, WITSource: f.b1.src, Proof: proof.HTTPSig, HTTPClient: f.b1.hc},
		AccessTokens: &chaining.AccessTokenVerifier{Keys: f.ttsBKeys, Issuer: b.TTS, Audience: b.Name},
		TrustDomain:  b.Name,
	}
	f.atB1 = make(chan b1Event, 4)
	f.b1Srv.serve(f.rec.wrap(receiver(f.b1Srv.URL+"/a2a", f.b1, f.witsAB, nil, true, b1Handoffs).Middleware(b1Handler(acceptor, b1Handoffs, f.atB1))))
	return nil
}

// startD1 is step 3: A1 starts D1 with A2.
func (f *flow) startD1(ctx context.Context) error {
	p, a, b, a1 := f.p, f.a, f.b, f.a1
	p.stepf("A1 opened a conversation (dialog D1) with A2; A2 knows for certain that A1 sent it, and A1's Txn-Token says what may be done and in which dialog.",
		"A1 starts dialog D1 with A2: a signed request with a Txn-Token from TTS A recording D1")
	a1Tokens := agent.NewTTSSource(&txntoken.Client{TokenEndpoint: f.mdA.TokenEndpoint, WITSource: a1.src, Proof: proof.HTTPSig, HTTPClient: a1.hc},
		a.Name, "trip.read trip.book", selfSigned(a, a1), nil)
	a1Agent := &agent.Agent{Self: a1.id, Client: &http.Client{Transport: transport(a1, a1Tokens, f.witsA)}}
	res, d1, err := a1Agent.Start(ctx, post(f.a2Srv.URL+"/task", `{"task":"plan a trip to `+b.Name+`"}`), "")
	if !p.check(err == nil && res.StatusCode == 200, "A2 answered with a signed response that echoes D1 (A1 verified it)", err) {
		return fmt.Errorf("D1 not established: %v", err)
	}
	res.Body.Close()
	v := <-f.atA2
	f.d1, f.atA2First = d1, v
	p.info("D1 = %s", d1.DLG())
	p.check(v.Sender.Equal(a1.id), "A2: the request was signed by A1's WIT key (who sent it)")
	p.check(v.Outcome == dialog.Established && v.Context.Initiator().Equal(a1.id), "A2: created D1 with A1 as initiator (section 5)")
	p.check(v.Txn != nil && v.Txn.Dialog() == d1.DLG(), "A2: the Txn-Token records D1 in tctx.dlg (what it may do, in which dialog)")
	return nil
}

// callTool is step 4: A2 calls the tool in D1.
func (f *flow) callTool(ctx context.Context) error {
	p, a2, d1, v := f.p, f.a2, f.d1, f.atA2First
	p.stepf("A2 called a tool for A1; the tool knows that A2 sent the call, that it belongs to D1, and that A1 started D1.",
		"A2 calls the tool in D1, forwarding the Txn-Token and A1's proof as provenance")
	prov, err := v.Forward()
	if err != nil {
		return err
	}
	a2Agent := &agent.Agent{Self: a2.id, Client: &http.Client{Transport: transport(a2, agent.Forwarded(v.TxnToken), f.witsA)}}
	res, err := a2Agent.Continue(ctx, post(f.toolSrv.URL+"/invoke", `{"query":"hotels in `+f.b.Name+`"}`), d1, prov)
	if !p.check(err == nil && res.StatusCode == 200, "the tool accepted the call", err) {
		return fmt.Errorf("tool call failed: %v", err)
	}
	res.Body.Close()
	tv := <-f.atTool
	p.check(tv.Sender.Equal(a2.id), "tool: who sent it: A2 (its HTTP signature covers Dialog-Context and Txn-Token)")
	p.check(tv.Txn != nil && tv.Txn.Dialog() == d1.DLG() && tv.Context.DLG() == d1.DLG(), "tool: the Txn-Token's dialog and the Dialog-Context agree: D1")
	p.check(tv.InitiatorVerified && tv.Chain != nil && tv.Chain.Hops[0].Equal(f.a1.id), "tool: A1 initiated D1, proved by A1's own signature carried as provenance")
	p.check(tv.Outcome == 0, "tool: stateless, it created no dialog")
	return nil
}

// handOff is step 5: identity chaining and the linked dialog D2 with a signed handoff.
func (f *flow) handOff(ctx context.Context) error {
	p, a2, b1 := f.p, f.a2, f.b1
	p.stepf("A2 handed work to B1 in the other trust domain without giving it any credential of domain A: domain A vouched for A2 with a grant, domain B turned the grant into its own access token, and the signed handoff offer is bound to that token.",
		"A2 hands work to B1 across the trust boundary: grant from AS A, access token from AS B, new dialog D2")
	delegator, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: a2.id.String(), Key: f.a2HK, Trust: f.htrust})
	if err != nil {
		return err
	}
	f.delegator = delegator
	linker := &agent.Linker{Self: a2.id, Transport: transport(a2, nil, f.witsAB), Tokens: &chaining.Client{HTTPClient: a2.hc}}
	linked, err := linker.Link(ctx, agent.LinkConfig{
		TxnToken: f.atA2First.TxnToken, GrantEndpoint: f.mdA.TokenEndpoint, PeerIssuer: f.b.TTS, PeerTokenEndpoint: f.mdB.TokenEndpoint, PeerTrustDomain: f.b.Name,
		Scope: "trip.book", Request: a2aPost(f.b1Srv.URL + "/a2a"),
		Body: func(accessToken, dlg string) ([]byte, error) {
			g := handoff.BindGrant([]byte(accessToken))
			task := "book the hotel"
			h, err := delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: b1.id.String(), Dialog: dlg, Task: &task, Grant: &g}, Work: "hotel"})
			if err != nil {
				return nil, err
			}
			f.offer = h
			return agent.A2AMessageSend(1, json.RawMessage(`{"role":"user","parts":[{"kind":"text","text":"book the hotel"}],"messageId":"m1"}`), h)
		},
	})
	if !p.check(err == nil, "AS A issued a grant for AS B; AS B redeemed it for a domain-B access token; B1 answered D2's first request", err) {
		return fmt.Errorf("linked dialog failed: %v", err)
	}
	f.linked = linked
	ev := <-f.atB1
	f.b1First = ev
	p.info("D2 = %s", linked.Dialog.DLG())
	p.check(ev.v != nil && ev.v.Sender.Equal(a2.id), "B1: the request was signed by A2, whose WIT B1 verified with domain A's issuer keys")
	p.check(ev.v != nil && ev.v.Outcome == dialog.Established && ev.v.Context.Initiator().Equal(a2.id), "B1: created D2 with A2 as initiator")
	p.check(ev.v != nil && ev.v.Handoff != nil && ev.v.Handoff.Outcome == handoff.OutcomeAccepted, "B1: the signed handoff offer verified (signature, audience, freshness, chain)", ev.err)
	if ev.v != nil && ev.v.Handoff != nil && ev.v.Handoff.Offer != nil {
		o := ev.v.Handoff.Offer
		p.check(o.Dialog == linked.Dialog.DLG(), "B1: the offer's dialog is D2, the request's Dialog-Context")
		p.check(o.Grant != nil && o.Grant.Val == handoff.BindGrant([]byte(linked.AccessToken)).Val, "B1: the offer's grant is the SHA-256 of the access token that came with the request")
	}
	return nil
}

// checkB1TxnToken is step 6: B1's Txn-Token of domain B, for D2.
func (f *flow) checkB1TxnToken(ctx context.Context) error {
	p, ev := f.p, f.b1First
	p.stepf("B1 got its own Txn-Token for the new dialog D2 from its own domain's TTS.",
		"B1 exchanges the access token at TTS B for a Txn-Token of domain B recording D2")
	if p.check(ev.acc != nil, "TTS B issued the Txn-Token", ev.err) {
		claims, err := txntoken.NewVerifier(f.ttsBKeys, f.b.Name).Verify(ctx, ev.acc.TxnToken.AccessToken)
		p.check(err == nil && claims.Dialog() == f.linked.Dialog.DLG(), "the domain-B Txn-Token verifies through TTS B's JWKS and records D2 in tctx.dlg", err)
		if err == nil {
			p.info("sub %q, scope %q, req_wl %s", claims.Sub, claims.Scope, claims.ReqWL)
		}
	}
	return nil
}

// collectStatuses is step 7: the handoff statuses come back to A2.
func (f *flow) collectStatuses(ctx context.Context) error {
	p, linked := f.p, f.linked
	p.stepf("B1 reported back with signed statuses (accepted, then completed) that A2 verified.",
		"The handoff statuses come back to A2, signed by B1")
	body, _ := io.ReadAll(linked.Response.Body)
	if st, err := taskStatus(body); p.check(err == nil, "B1's answer carries a signed status", err) {
		up, err := f.delegator.HandleStatus(ctx, *st)
		p.check(err == nil && up.Hop.State == handoff.StateAccepted, "A2 verified B1's \"accepted\" status for its offer", err)
	}
	// A2 asks for the task's outcome in D2, with the access token again.
	getReq := post(f.b1Srv.URL+"/a2a", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":%q}}`, hopOf(f.offer)))
	getReq.Header.Set("Authorization", "Bearer "+linked.AccessToken)
	pt := pinnedTransport(f.a2, linked.Credential, f.witsAB)
	pt.ResponseSigners = linked.Signers // B1's answers in D2 are signed in domain B
	linkedAgent := &agent.Agent{Self: f.a2.id, Client: &http.Client{Transport: pt}}
	res, err := linkedAgent.Continue(ctx, getReq, linked.Dialog, nil)
	if p.check(err == nil && res.StatusCode == 200, "A2 continued D2 with B1 (tasks/get)", err) {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		<-f.atB1
		if st, err := taskStatus(body); p.check(err == nil, "B1's answer carries the final signed status", err) {
			up, err := f.delegator.HandleStatus(ctx, *st)
			p.check(err == nil && up.Hop.State == handoff.StateCompleted, "A2 verified B1's \"completed\" status: the hop is resolved", err)
		}
	}
	return nil
}

// checkSeparation is step 9: nothing of D1 crossed into domain B.
func (f *flow) checkSeparation(context.Context) error {
	p, rec, linked := f.p, f.rec, f.linked
	d1, txnA := f.d1.DLG(), f.atA2First.TxnToken
	p.stepf("nothing of dialog D1 and no Txn-Token of domain A reached domain B.",
		"Domain separation: nothing of D1 crossed into domain B")
	if f.ds.serverSide {
		p.info("%d requests reached domain B's servers (recorded by WIT issuer B, TTS B and B1 themselves)", rec.count())
	} else {
		p.info("%d requests reached domain B (recorded by B1 itself, and as the workloads sent them for WIT issuer B and TTS B)", rec.count())
	}
	p.check(rec.contains(linked.Dialog.DLG()) && rec.contains(linked.AccessToken),
		"the record holds D2's identifier and the domain-B access token: it saw the requests of D2")
	p.check(!rec.contains(d1), "D1's identifier never reached domain B")
	p.check(!rec.contains(txnA), "the domain-A Txn-Token never reached domain B")
	p.check(!rec.contains(tokenhash.Of(txnA)), "not even its hash")
	if f.idToken != "" {
		p.check(!rec.contains(f.idToken) && !rec.contains(tokenhash.Of(f.idToken)), "A1's ID token (step 8) never reached domain B, nor its hash: only the ID-JAG did")
	}
	if !f.ds.serverSide {
		f.checkTTSBLog(d1, txnA)
		p.skip("what reached WIT issuer B from other processes", "a deployed service in another process, and its log does not record request contents; the in-process demo records it")
	}
	return nil
}

// checkTTSBLog: the deployed services run in other processes, so what reached them
// from anywhere but this process is seen only through TTS B's log, which names every
// subject token by its hash and every dialog it issued a Txn-Token for.
func (f *flow) checkTTSBLog(d1, txnA string) {
	p, b, linked := f.p, f.b, f.linked
	if b.TTSLog == "" {
		p.skip("TTS B's own record of what reached it", "no log file named (DIALOGTRUST_LOCAL_B_TTS_LOG)")
		return
	}
	log, err := os.ReadFile(b.TTSLog)
	if p.check(err == nil && bytes.Contains(log, []byte(tokenhash.Of(linked.AccessToken))) && bytes.Contains(log, []byte(linked.Dialog.DLG())),
		"TTS B's log records B1's exchange (D2, the access token's hash): it is the log of what reached TTS B", b.TTSLog, err) {
		p.check(!bytes.Contains(log, []byte(d1)), "TTS B's log never names D1")
		p.check(!bytes.Contains(log, []byte(txnA)) && !bytes.Contains(log, []byte(tokenhash.Of(txnA))),
			"TTS B's log has neither the domain-A Txn-Token nor its hash")
	}
}

// getStatus is the status code of GET u.
func getStatus(ctx context.Context, hc *http.Client, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	res.Body.Close()
	return res.StatusCode, nil
}

// workload is a participant's credentials: WITs from its domain's issuer, a fresh key
// for each.
type workload struct {
	// name is the workload's name in the report (A1); domain its trust domain.
	name, domain string
	id           identifier.ID
	src          wit.Source
	// hc carries the workload's calls, which the wire observer records as its own.
	hc *http.Client
}

func newWorkload(d Domain, md *witissuer.Metadata, name, path, alg string, hc *http.Client) (workload, error) {
	id, err := identifier.Parse("wimse://" + d.Name + path)
	if err != nil {
		return workload{}, fmt.Errorf("trust domain %q: %w", d.Name, err)
	}
	c := &witissuer.Client{Endpoint: md.WITEndpoint, Audience: md.Issuer, Subject: id.String(), HTTPClient: hc}
	return workload{name: name, domain: d.Name, id: id, src: c.Source(wit.WithKeyAlgorithm(alg)), hc: hc}, nil
}

type b1Event struct {
	v   *dialog.Verified
	acc *agent.Accepted
	err error
}

// b1Handler is B1's work: on the first request of D2 it takes the handed-off work and
// gets its own Txn-Token; on tasks/get it reports the work done.
func b1Handler(acceptor *agent.LinkAcceptor, rcv *handoff.Receiver, out chan<- b1Event) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := dialog.FromRequest(r)
		ev := b1Event{v: v}
		var status handoff.Signed
		var err error
		if v.Handoff == nil && v.Outcome == dialog.Established {
			// A linked dialog without a handoff (step 8, the ID-JAG path): B1 gets its
			// Txn-Token for it and answers.
			ev.acc, ev.err = acceptor.Accept(r.Context(), r)
			out <- ev
			okJSON(w)
			return
		}
		if v.Handoff != nil && v.Handoff.Offer != nil {
			ev.acc, ev.err = acceptor.Accept(r.Context(), r)
			if ev.err == nil {
				status, err = rcv.Accept(r.Context(), v.Handoff.Offer.Iss, v.Handoff.Offer.Hop)
			} else {
				status, err = rcv.Reject(r.Context(), v.Handoff.Offer.Iss, v.Handoff.Offer.Hop, handoff.ReasonPolicy, "no Txn-Token for the linked dialog")
			}
		} else {
			var q struct {
				Params struct {
					ID string `json:"id"`
				} `json:"params"`
			}
			body, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(body, &q)
			status, err = rcv.Complete(r.Context(), v.Sender.String(), q.Params.ID, nil)
		}
		if err != nil && ev.err == nil {
			ev.err = err
		}
		out <- ev
		task, _ := handoff.PutA2ATaskStatus([]byte(`{"kind":"task","status":{"state":"working","message":{"role":"agent","parts":[],"messageId":"s1"}}}`), status)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": json.RawMessage(task)})
	})
}

func taskStatus(body []byte) (*handoff.Signed, error) {
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	return handoff.A2ATaskStatus(env.Result)
}

func hopOf(h *handoff.Handoff) string {
	if h == nil {
		return ""
	}
	o, err := handoff.DecodeOffer(h.Offer)
	if err != nil {
		return ""
	}
	return o.Hop
}

func receiver(aud string, self workload, v *wit.Validator, txn dialog.TxnTokenVerifier, stateful bool, handoffs *handoff.Receiver) *dialog.Receiver {
	replay := store.NewMemory()
	opts := []dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(v, httpsig.WithAudiences(aud), httpsig.WithReplay(replay))),
		dialog.WithProvenance(dialog.NewProvenanceVerifier(v, 0)),
		dialog.WithResponseSigner(func(ctx context.Context) (*httpsig.Signer, error) {
			c, err := self.src.Credential(ctx)
			if err != nil {
				return nil, err
			}
			return httpsig.NewSigner(c.Key, c.WIT), nil
		}),
	}
	if txn != nil {
		opts = append(opts, dialog.WithTxnTokens(txn))
	}
	if stateful {
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())))
	}
	if handoffs != nil {
		opts = append(opts, dialog.WithHandoffs(handoffs, nil))
	}
	rc, err := dialog.NewReceiver(opts...)
	if err != nil {
		panic(err) // only misconfiguration of this file can cause it
	}
	return rc
}

func transport(wl workload, tokens agent.TxnTokenSource, v *wit.Validator) *agent.Transport {
	return &agent.Transport{Base: wl.hc.Transport, Source: wl.src, Tokens: tokens, RequireSignedResponse: true, Responses: httpsig.NewVerifier(v)}
}

// pinnedTransport signs with the one credential the linked dialog's access token is
// bound to.
func pinnedTransport(wl workload, c *wit.Credential, v *wit.Validator) *agent.Transport {
	t := transport(wl, nil, v)
	t.Source = c
	return t
}

func selfSigned(d Domain, wl workload) agent.SubjectFunc {
	return func(ctx context.Context) (string, string, error) {
		c, err := wl.src.Credential(ctx)
		if err != nil {
			return "", "", err
		}
		tok, err := txntoken.NewSelfSignedToken(c.Key, wl.id, "alice@"+d.Name, d.TTS, "trip.read trip.book", 5*time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}
}

// a2aPost is an A2A 0.3 JSON-RPC POST that lists the handoff extension (handoff-context
// section 6) under both header names; the linker sets its body.
func a2aPost(url string) *http.Request {
	req := post(url, "{}")
	hostproto.AddA2A03Extension(req.Header)
	return req
}

func post(url, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

func okJSON(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true}`)
}
