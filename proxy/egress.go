package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/httpbody"
	"github.com/dialogtrust/dialogtrust/internal/loopback"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Route maps a path prefix of the egress listener to an upstream.
type Route struct {
	// Prefix is the path prefix served ("/" serves every path); the rest of the path
	// follows the upstream URL's path.
	Prefix string
	// Upstream is the base URL requests go to: https, or http to a loopback IP
	// literal or localhost, or any http when AllowPlainHTTP is set.
	Upstream string
	// AllowPlainHTTP allows an http upstream that is not on loopback.
	AllowPlainHTTP bool
	// TxnAudience is the trust domain the Txn-Token is requested for (the TTS's
	// audience); "" sends no Txn-Token. TxnScope is its scope.
	TxnAudience string
	TxnScope    string
	// Recipient is the wimse-aud (or WPT aud) value naming the upstream, which its
	// receiver accepts by configuration; default the target URI without query.
	Recipient string
	// Proof is proof.HTTPSig (the zero value) or proof.WPT.
	Proof proof.Method
	// BindRequest (WPT only) binds each request's method, path, query and body
	// (Content-Digest) through the WPT's oth (agent.Transport.BindRequest). Without it a
	// WPT with a fixed Recipient binds none of them.
	BindRequest bool
	// RequireSignedResponse asks for a signed response (wimse-sign-response) and
	// refuses an unsigned one (HTTP signature only).
	RequireSignedResponse bool
	// ResponseSigners names the workloads whose signed responses the route believes:
	// each a workload identifier, or a prefix ending in "/" (scheme://trust-domain/ or
	// a path under it). Default: the route's own trust domain (signers.go); another
	// signer is refused with response_signer_mismatch.
	ResponseSigners []string
	// Boundary, when set, marks the route as crossing a trust boundary: requests go
	// in a linked dialog through identity chaining (boundary.go, section 11).
	Boundary *BoundaryRoute
	// Delegate is the AgentId the route's handoff offers are addressed to (their aud);
	// zero: the route makes no offers (HandoffField is refused). Host is the host
	// protocol whose JSON-RPC requests carry them (handoff-context section 6). A route
	// with a Delegate needs a Host and a TxnAudience (the grant is the Txn-Token's
	// digest), and does not cross a trust boundary.
	Delegate identifier.ID
	Host     hostproto.Host
	// UpstreamTimeout bounds the wait for this route's upstream to answer (default
	// EgressConfig.UpstreamTimeout; see DefaultUpstreamTimeout).
	UpstreamTimeout time.Duration
}

// EgressConfig configures an Egress.
type EgressConfig struct {
	// Self is the workload identifier: the initiator of the dialogs the egress starts.
	Self identifier.ID
	// WIT gives the workload's WIT and key, refreshed (witissuer.Client.Source).
	WIT wit.Source
	// TTS asks the Transaction Token Service; required when a route has an Audience.
	TTS *txntoken.Client
	// Subject gives the subject token the TTS requests present.
	Subject agent.SubjectFunc
	// Responses verifies signed responses (the upstream's WIT by trust configuration);
	// required for HTTP-signature routes.
	Responses *httpsig.Verifier
	// RootCAs are the roots an https upstream is verified with (nil: the system's).
	RootCAs *x509.CertPool
	// Base, when set, carries the signed requests in place of the egress's own
	// transport (no environment proxy, MaxIdleConnsPerUpstream idle connections per
	// upstream; tests put a tampering hop here).
	Base http.RoundTripper
	// Now is the clock of the Txn-Token cache (default time.Now).
	Now func() time.Time
	// HandoffKey signs the handoff offers the egress makes, as Self (handoff-context
	// section 3); HandoffTrust binds each delegate's keys to its AgentId, for its
	// statuses (section 3.4). Both are required when a route has a Delegate.
	HandoffKey   *keys.PrivateKey
	HandoffTrust handoff.Trust
	Routes       []Route
	// StreamIdleTimeout bounds the wait between two reads of a response passed through
	// as it comes (stream.go; default DefaultStreamIdleTimeout).
	StreamIdleTimeout time.Duration
	// UpstreamTimeout bounds the wait for an upstream to answer, for every route
	// without an UpstreamTimeout of its own (default DefaultUpstreamTimeout).
	UpstreamTimeout time.Duration
	// Log receives each refusal, the egress's own and the upstream's it passes on, with
	// its stable code (refusal.go), and what cannot be answered to the agent: a
	// passed-through response that broke off after its header went out (default:
	// discarded).
	Log *slog.Logger
	// AllowedHosts are the Host values the egress answers (host or host:port, any
	// case; CheckAllowedHosts), in place of the default: on TCP localhost, 127.0.0.1,
	// [::1] and the listener's address at the listener's port, on a Unix socket any.
	// AllowedOrigins are the origins whose browser pages may use the egress besides its
	// own (CheckAllowedOrigins). A request refused by either is answered before anything
	// is fetched or signed (egress_callers.go: DNS rebinding, CSRF).
	AllowedHosts   []string
	AllowedOrigins []string
}

// Egress is the proxy for the local agent's outgoing requests: an http.Handler taking
// plain HTTP and forwarding each request through agent.Transport, which attaches the
// WIT, the Dialog-Context, the Txn-Token of the dialog and the proof (sections 7, 8,
// 10).
type Egress struct {
	self    identifier.ID
	callers *callers // who may use the egress (egress_callers.go)
	routes  []egressRoute
	stream  streamer
}

type egressRoute struct {
	prefix   string
	upstream *url.URL
	proof    proof.Method
	agent    *agent.Agent
	link     *boundaryLink // a route crossing a trust boundary, else nil
	handoff  *routeHandoff // nil: the route makes no handoff offers
	// signed: the route requires a signed response, so its responses are read whole
	// (the signature covers their digest).
	signed bool
	// wait bounds the wait for the upstream's answer (Route.UpstreamTimeout).
	wait time.Duration
}

// upstreamTimeout bounds the exchanges of a boundary route with the token services of
// either domain (AS A and AS B, boundary.go), which answer at once or not at all: an
// upstream's answer is bounded by the route's UpstreamTimeout instead.
const upstreamTimeout = 30 * time.Second

// NewEgress checks cfg and builds the egress; every route's Txn-Tokens are cached per
// dialog until shortly before they expire (agent.TTSSource).
func NewEgress(cfg EgressConfig) (*Egress, error) {
	if cfg.WIT == nil {
		return nil, errcode.New(errcode.InvalidRequest, "egress: a WIT source is required")
	}
	if cfg.Self.IsZero() {
		return nil, errcode.New(errcode.InvalidRequest, "egress: the workload identifier is required")
	}
	if len(cfg.Routes) == 0 {
		return nil, errcode.New(errcode.InvalidRequest, "egress: at least one route is required")
	}
	stream, defaultWait, err := sideWaits(cfg.StreamIdleTimeout, cfg.UpstreamTimeout, cfg.Log, "egress")
	if err != nil {
		return nil, err
	}
	base := egressBase(cfg.Base, cfg.RootCAs)
	who, err := newCallers(cfg.AllowedHosts, cfg.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	e := &Egress{self: cfg.Self, callers: who, stream: stream}
	seen := map[string]bool{}
	for _, rt := range cfg.Routes {
		prefix, err := cleanPrefix(rt.Prefix)
		if err != nil {
			return nil, err
		}
		if seen[prefix] {
			return nil, errcode.New(errcode.InvalidRequest, "egress: route prefix %q given twice", prefix)
		}
		seen[prefix] = true
		up, err := CheckUpstream(rt.Upstream, rt.AllowPlainHTTP)
		if err != nil {
			return nil, err
		}
		wait, err := upstreamWaitOf(rt.UpstreamTimeout, defaultWait, "egress route "+prefix)
		if err != nil {
			return nil, err
		}
		signers, err := routeSigners(cfg.Self, rt, prefix)
		if err != nil {
			return nil, err
		}
		t := &agent.Transport{Base: base, Source: cfg.WIT, Proof: rt.Proof, Responses: cfg.Responses, RequireSignedResponse: rt.RequireSignedResponse, ResponseSigners: signers, BindRequest: rt.BindRequest}
		switch {
		case rt.BindRequest && rt.Proof != proof.WPT:
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: bind_request is for a WPT route (an HTTP signature covers the request always)", prefix)
		case rt.Proof == proof.WPT && rt.RequireSignedResponse:
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a signed response needs the HTTP signature, not a WPT", prefix)
		case rt.Proof == proof.HTTPSig && cfg.Responses == nil:
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: HTTP signatures need a response verifier", prefix)
		}
		if rt.Recipient != "" {
			recipient := rt.Recipient
			t.Audience = func(*http.Request) string { return recipient }
		}
		if rt.TxnAudience != "" {
			if cfg.TTS == nil || cfg.Subject == nil {
				return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a Txn-Token audience needs a TTS client and a subject token", prefix)
			}
			t.Tokens = agent.NewTTSSource(cfg.TTS, rt.TxnAudience, rt.TxnScope, cfg.Subject, cfg.Now)
		}
		var link *boundaryLink
		if rt.Boundary != nil {
			if link, err = newBoundaryLink(cfg, prefix, rt, t); err != nil {
				return nil, err
			}
		}
		client := &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
			// A redirect goes back to the agent: following it would sign a request to
			// a target no route names.
			return http.ErrUseLastResponse
		}}
		rh, err := newRouteHandoff(cfg, rt, prefix, t.Tokens)
		if err != nil {
			return nil, err
		}
		e.routes = append(e.routes, egressRoute{prefix: prefix, upstream: up, proof: rt.Proof, agent: &agent.Agent{Self: cfg.Self, Client: client}, link: link, handoff: rh, signed: rt.RequireSignedResponse, wait: wait})
	}
	return e, nil
}

// cleanPrefix makes a route prefix "/" or "/a/b" (no trailing slash).
func cleanPrefix(p string) (string, error) {
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != strings.TrimSuffix(p, "/") && p != "/" {
		return "", errcode.New(errcode.InvalidRequest, "route prefix %q must be an absolute path in normal form", errcode.Cut(p))
	}
	return path.Clean(p), nil
}

// CheckUpstream parses an upstream URL: https, or http only to a loopback IP literal
// or localhost unless plainHTTP allows it; no user information, query or fragment.
func CheckUpstream(raw string, plainHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errcode.New(errcode.InvalidRequest, "upstream %q must be an absolute http(s) URL without user information, query or fragment", errcode.Cut(raw))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !plainHTTP && !loopback.IsHost(u.Hostname()) {
			return nil, errcode.New(errcode.InvalidRequest, "upstream %q: plain HTTP only to loopback (or with plain HTTP allowed for the route)", errcode.Cut(raw))
		}
	default:
		return nil, errcode.New(errcode.InvalidRequest, "upstream %q: scheme must be https or http", errcode.Cut(raw))
	}
	return u, nil
}

// normalPath reports whether p is absolute and has no dot segment or empty segment
// (a trailing slash is allowed).
func normalPath(p string) bool {
	return p != "" && p[0] == '/' && (p == "/" || path.Clean(p) == strings.TrimSuffix(p, "/"))
}

// match finds the route with the longest prefix matching p and the rest of p.
func (e *Egress) match(p string) (*egressRoute, string) {
	var best *egressRoute
	rest := ""
	for i := range e.routes {
		rt := &e.routes[i]
		var r string
		switch {
		case rt.prefix == "/":
			r = p
		case p == rt.prefix:
			r = ""
		case strings.HasPrefix(p, rt.prefix+"/"):
			r = p[len(rt.prefix):]
		default:
			continue
		}
		if best == nil || len(rt.prefix) > len(best.prefix) {
			best, rest = rt, r
		}
	}
	return best, rest
}

// ServeHTTP forwards one request of the local agent. The agent names the dialog with
// the Dialog-Context field, or asks for a new one with StartDialogField: "?1"; without
// either the request goes outside any dialog and without a Txn-Token. Every refusal is
// a problem document with a stable code, except a refusal at the handoff step (an offer
// asked for that cannot be made) of a JSON-RPC request with an id, which is a JSON-RPC
// error (dialog.WriteRefusal); the upstream's own answer (a refusal of the receiver
// there included) comes back as it is.
func (e *Egress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var x egressExchange
	if err := e.serve(w, r, &x); err != nil {
		e.refuse(w, r, x.body, err)
	}
}

// serve takes one request of the agent through its steps: admit (who calls, the route,
// the fields, the body), the wait for the upstream, the handoff step, the outgoing
// request, the exchange through the route's agent (or its boundary link) and the
// answer.
func (e *Egress) serve(w http.ResponseWriter, r *http.Request, x *egressExchange) error {
	if err := e.admit(r, x); err != nil {
		return err
	}
	// The upstream exchange ends with the agent's request, or earlier when the route's
	// wait for the answer runs out (upstreamWait, from here: the handoff step's
	// exchanges included) or a response passed through as it comes goes idle
	// (streamer.pass).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	x.ctx, x.cancel = ctx, cancel
	x.wait = waitUpstream(http.NewResponseController(w), r, x.rt.wait, cancel)
	defer x.wait.end()
	if x.start {
		x.startDLG = agent.NewDialogID()
	}
	if refused, err := e.handoffStep(w, r, x); refused || err != nil {
		return err
	}
	out, err := x.outgoing(r)
	if err != nil {
		return err
	}
	if x.rt.link != nil {
		// The link reads the answer whole and writes it before it returns.
		note := func(res *http.Response, body []byte) { e.noteUpstreamRefusal(r, res, body) }
		if err := x.rt.link.serve(x.ctx, w, out, x.dc, x.start, note); err != nil {
			return x.wait.refusal(err)
		}
		return nil
	}
	res, err := x.send(out)
	if err != nil {
		return x.wait.refusal(upstreamError(err))
	}
	defer res.Body.Close()
	if x.offer != nil {
		x.offer.remember(x.body) // the delegate may take the hop from here on: it can be canceled
	}
	return e.answer(w, r, x, res)
}

// egressExchange is one request of the agent on its way through the egress: what admit
// read from it, then what the handoff step made of its body and context.
type egressExchange struct {
	rt       *egressRoute
	rest     string // the request's path below the route's prefix
	start    bool   // StartDialogField: ?1, a new dialog named startDLG
	startDLG string
	dc       *dialog.Context    // the dialog the agent names, nil outside one
	prov     *dialog.Provenance // the provenance the agent forwards in dc, or nil
	body     []byte

	ctx       context.Context    // the upstream exchange's
	cancel    context.CancelFunc // ends the upstream exchange
	wait      *upstreamWait
	offer     *egressOffer // the signed offer placed in body, or nil
	cancelHop string       // the hop whose cancel is placed in body, or ""
}

// admit checks the agent's request before anything is sent or its body read: who may
// call (a web page on the host is not the agent, whatever else it sends), the path and
// its route, the field names, and the dialog and provenance it asks for; then reads the
// body, bounded.
func (e *Egress) admit(r *http.Request, x *egressExchange) error {
	if err := e.callers.check(r); err != nil {
		return err
	}
	p := r.URL.Path
	if !normalPath(p) {
		return errcode.New(errcode.NoRoute, "the path is not in normal form")
	}
	if x.rt, x.rest = e.match(p); x.rt == nil {
		return errcode.New(errcode.NoRoute, "no egress route for %q", errcode.Cut(p))
	}
	if err := checkAgentFieldNames(r.Header); err != nil {
		return err
	}
	if err := x.readDialog(r.Header); err != nil {
		return err
	}
	body, err := httpbody.Read(r.Body, MaxBody, "request body")
	if err != nil {
		return err
	}
	x.body = body
	return nil
}

// readDialog reads the dialog the agent asks for: a new one (StartDialogField), the one
// its Dialog-Context names, or none; and the provenance it forwards in that dialog
// (ProvenanceField), which does not cross a trust boundary.
func (x *egressExchange) readDialog(h http.Header) error {
	switch vals := h.Values(StartDialogField); {
	case len(vals) > 1:
		return errcode.New(errcode.DuplicateField, "more than one %s field", StartDialogField)
	case len(vals) == 1 && strings.TrimSpace(vals[0]) == "?1":
		x.start = true
	case len(vals) == 1 && strings.TrimSpace(vals[0]) != "?0":
		return errcode.New(errcode.InvalidRequest, "%s must be ?1 or ?0", StartDialogField)
	}
	dc, err := dialog.FromHeader(h)
	if err != nil {
		return err
	}
	if x.start && dc != nil {
		return errcode.New(errcode.InvalidRequest, "%s and a Dialog-Context exclude each other", StartDialogField)
	}
	prov, err := forwardedProvenance(h, dc)
	if err != nil {
		return err
	}
	if prov != nil && x.rt.link != nil {
		// The linked dialog D2 is a new dialog: D1's provenance stays in its domain.
		return errcode.New(errcode.CrossesTrustBoundary, "%s on a route crossing a trust boundary: the provenance of the dialog does not cross it (section 11)", ProvenanceField)
	}
	x.dc, x.prov = dc, prov
	return nil
}

// handoffStep reads the agent's handoff instructions (HandoffField, HandoffCancelField)
// and places in the body the cancel of a hop or a new signed offer, whose context the
// exchange then runs in (handoff_egress.go). A refusal at this step is answered here
// (refuseHandoff) and reported by refused; err refuses the fields themselves.
func (e *Egress) handoffStep(w http.ResponseWriter, r *http.Request, x *egressExchange) (refused bool, err error) {
	wantOffer, task, err := handoffRequest(r.Header)
	if err != nil {
		return false, err
	}
	cancelHop, err := handoffCancelRequest(r.Header)
	if err != nil {
		return false, err
	}
	if cancelHop != "" && wantOffer {
		return false, errcode.New(errcode.InvalidRequest, "%s and %s: ?1 exclude each other", HandoffCancelField, HandoffField)
	}
	if cancelHop != "" {
		placed, err := e.cancelFor(x.ctx, x.rt, cancelHop, x.dc, x.body)
		if err != nil {
			e.refuseHandoff(w, r, x.body, x.wait.refusal(err))
			return true, nil
		}
		x.body, x.cancelHop = placed, cancelHop
	}
	if wantOffer {
		offer, err := e.offerFor(x.ctx, x.rt, task, x.dc, x.startDLG, x.body)
		if err != nil {
			e.refuseHandoff(w, r, x.body, x.wait.refusal(err))
			return true, nil
		}
		x.offer, x.body, x.ctx = offer, offer.body, offer.ctx
	}
	return false, nil
}

// refuseHandoff answers a refusal at the handoff step (an offer asked for that cannot
// be made, a cancel that cannot be placed) as the receiver answers a refused offer: a
// JSON-RPC request with an id gets a JSON-RPC error, which the agent's SDK raises as
// the call's error (dialog.WriteRefusal; docs/errors.md, "How a refusal is sent").
func (e *Egress) refuseHandoff(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	e.logRefusal(r, err, problem.Status(err), refusedByEgress)
	w.Header().Set(RefusedByField, refusedByEgress)
	dialog.WriteRefusal(w, body, err)
}

// outgoing builds the request to the upstream: the route's URL with the rest of the
// agent's path and its query, the body, and the agent's fields without the hop-by-hop
// ones, the proxies' namespace and the credentials the egress makes (in any spelling).
func (x *egressExchange) outgoing(r *http.Request) (*http.Request, error) {
	target := *x.rt.upstream
	if x.rest != "" {
		target.Path = strings.TrimSuffix(target.Path, "/") + x.rest
		target.RawPath = ""
	}
	if target.Path == "" {
		target.Path = "/"
	}
	target.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(x.ctx, r.Method, target.String(), bytes.NewReader(x.body))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "the request cannot be forwarded")
	}
	if len(x.body) == 0 {
		out.Body, out.GetBody, out.ContentLength = http.NoBody, nil, 0
	}
	// The agent's request is the egress's own and is not read again: its fields are
	// trimmed in place rather than copied (agent.Transport copies them to sign).
	out.Header = r.Header
	removeHopByHop(out.Header)
	removePrefixed(out.Header)
	removeAnySpelling(out.Header, credentialNames)
	if x.rt.proof == proof.WPT {
		out.Header.Del("Authorization") // the WPT travels there (wpt.AuthScheme)
	}
	return out, nil
}

// send sends out through the route's agent (agent.Transport): in the new dialog asked
// for, in the dialog the agent names with the provenance it forwards, or outside any
// dialog without a Txn-Token.
func (x *egressExchange) send(out *http.Request) (*http.Response, error) {
	if x.offer != nil || x.cancelHop != "" {
		hostproto.ListExtension(x.rt.handoff.host, out.Header)
	}
	switch {
	case x.start:
		res, _, err := x.rt.agent.Start(x.ctx, out, x.startDLG)
		return res, err
	case x.dc != nil:
		return x.rt.agent.Continue(x.ctx, out, x.dc, x.prov)
	}
	return x.rt.agent.Client.Do(out)
}

// answer gives the agent the upstream's response. One that nothing is computed over
// goes to the agent as it comes; any other is read whole, the delegate's status in it
// checked (egressOffer.answer) or the canceled hop named (HandoffHopField), then
// written. The proxy's fields in a response are the egress's own, never the
// upstream's.
func (e *Egress) answer(w http.ResponseWriter, r *http.Request, x *egressExchange, res *http.Response) error {
	if x.offer == nil && x.cancelHop == "" && !x.rt.signed && canFlush(w) {
		// Nothing is computed over this body: it goes to the agent as it comes. A
		// signed response that was not required is verified whole by agent.Transport
		// before it gets here. From its header on, the idle bound replaces the wait.
		if err := x.wait.answered(); err != nil {
			return err
		}
		removePrefixed(res.Header)
		e.noteUpstreamRefusal(r, res, nil)
		e.stream.pass(w, r, res, x.cancel)
		return nil
	}
	resBody, err := httpbody.Read(res.Body, MaxBody, "upstream response")
	if err != nil {
		return x.wait.refusal(errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream's response is not usable"))
	}
	if err := x.wait.answered(); err != nil {
		return err
	}
	removePrefixed(res.Header)
	if x.offer != nil {
		if err := x.offer.answer(x.ctx, res, resBody); err != nil {
			return err
		}
	}
	if x.cancelHop != "" {
		res.Header.Set(HandoffHopField, x.cancelHop)
	}
	e.noteUpstreamRefusal(r, res, resBody)
	writeResponse(w, res, resBody)
	return nil
}

// forwardedProvenance reads ProvenanceField: nil without one, else the provenance the
// agent forwards in dc, bounded and in canonical form (dialog.ParseProvenance) and made
// in dc, so that provenance of another dialog is refused before anything is sent.
func forwardedProvenance(h http.Header, dc *dialog.Context) (*dialog.Provenance, error) {
	vals := h.Values(ProvenanceField)
	switch {
	case len(vals) == 0:
		return nil, nil
	case len(vals) > 1:
		return nil, errcode.New(errcode.DuplicateField, "more than one %s field", ProvenanceField)
	case dc == nil:
		return nil, errcode.New(errcode.InvalidProvenance, "%s without a Dialog-Context: provenance is forwarded only in the dialog it was received in", ProvenanceField)
	}
	p, err := dialog.ParseProvenance(vals[0])
	if err != nil {
		return nil, err
	}
	if err := p.CheckContext(dc); err != nil {
		return nil, err
	}
	return p, nil
}

// egressBase is the transport under the egress's routes: the configured one, or
// upstreamTransport trusting roots. Each request's wait is its route's (upstreamWait).
func egressBase(given http.RoundTripper, roots *x509.CertPool) http.RoundTripper {
	if given != nil {
		return given
	}
	tr := upstreamTransport()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	return tr
}
