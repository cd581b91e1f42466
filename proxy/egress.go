package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
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
	stream, err := newStreamer(cfg.StreamIdleTimeout, cfg.Log, "egress")
	if err != nil {
		return nil, err
	}
	defaultWait, err := upstreamWaitOf(cfg.UpstreamTimeout, DefaultUpstreamTimeout, "egress")
	if err != nil {
		return nil, err
	}
	base := cfg.Base
	if base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil // the egress is the proxy: an environment proxy would see the credentials
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs}
		// No ResponseHeaderTimeout: each request's wait is its route's (upstreamWait),
		// and covers the body of a response read whole too.
		tr.MaxIdleConnsPerHost = MaxIdleConnsPerUpstream
		base = tr
	}
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
		if !plainHTTP && !isLoopbackHost(u.Hostname()) {
			return nil, errcode.New(errcode.InvalidRequest, "upstream %q: plain HTTP only to loopback (or with plain HTTP allowed for the route)", errcode.Cut(raw))
		}
	default:
		return nil, errcode.New(errcode.InvalidRequest, "upstream %q: scheme must be https or http", errcode.Cut(raw))
	}
	return u, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
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
	if err := e.serve(w, r); err != nil {
		e.refuse(w, r, err)
	}
}

func (e *Egress) serve(w http.ResponseWriter, r *http.Request) error {
	// First: a web page on the host (DNS rebinding, a cross-site request) is not the
	// agent, whatever else it sends.
	if err := e.callers.check(r); err != nil {
		return err
	}
	p := r.URL.Path
	if !normalPath(p) {
		return errcode.New(errcode.NoRoute, "the path is not in normal form")
	}
	rt, rest := e.match(p)
	if rt == nil {
		return errcode.New(errcode.NoRoute, "no egress route for %q", errcode.Cut(p))
	}
	if err := checkAgentFieldNames(r.Header); err != nil {
		return err
	}
	start := false
	switch vals := r.Header.Values(StartDialogField); {
	case len(vals) > 1:
		return errcode.New(errcode.DuplicateField, "more than one %s field", StartDialogField)
	case len(vals) == 1 && strings.TrimSpace(vals[0]) == "?1":
		start = true
	case len(vals) == 1 && strings.TrimSpace(vals[0]) != "?0":
		return errcode.New(errcode.InvalidRequest, "%s must be ?1 or ?0", StartDialogField)
	}
	dc, err := dialog.FromHeader(r.Header)
	if err != nil {
		return err
	}
	if start && dc != nil {
		return errcode.New(errcode.InvalidRequest, "%s and a Dialog-Context exclude each other", StartDialogField)
	}
	prov, err := forwardedProvenance(r.Header, dc)
	if err != nil {
		return err
	}
	if prov != nil && rt.link != nil {
		// The linked dialog D2 is a new dialog: D1's provenance stays in its domain.
		return errcode.New(errcode.CrossesTrustBoundary, "%s on a route crossing a trust boundary: the provenance of the dialog does not cross it (section 11)", ProvenanceField)
	}
	body, err := readBounded(r.Body, "request body")
	if err != nil {
		return err
	}
	// The upstream exchange ends with the agent's request, or earlier when the route's
	// wait for the answer runs out (upstreamWait, from here: the handoff step's
	// exchanges included) or a response passed through as it comes goes idle
	// (streamer.pass).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	wait := waitUpstream(http.NewResponseController(w), r, rt.wait, cancel)
	defer wait.end()
	startDLG := ""
	if start {
		startDLG = agent.NewDialogID()
	}
	wantOffer, task, err := handoffRequest(r.Header)
	if err != nil {
		return err
	}
	cancelHop, err := handoffCancelRequest(r.Header)
	if err != nil {
		return err
	}
	if cancelHop != "" && wantOffer {
		return errcode.New(errcode.InvalidRequest, "%s and %s: ?1 exclude each other", HandoffCancelField, HandoffField)
	}
	if cancelHop != "" {
		placed, err := e.cancelFor(ctx, rt, cancelHop, dc, body)
		if err != nil {
			err = wait.refusal(err)
			e.logRefusal(r, err, problem.Status(err), refusedByEgress)
			w.Header().Set(RefusedByField, refusedByEgress)
			dialog.WriteRefusal(w, body, err) // as a refused offer is answered
			return nil
		}
		body = placed
	}
	var offer *egressOffer
	if wantOffer {
		if offer, err = e.offerFor(ctx, rt, task, dc, startDLG, body); err != nil {
			// A refusal at the handoff step answers a JSON-RPC request as the
			// receiver's does: a JSON-RPC error, which the agent's SDK raises as the
			// call's error (docs/errors.md, "How a refusal is sent").
			err = wait.refusal(err)
			e.logRefusal(r, err, problem.Status(err), refusedByEgress)
			w.Header().Set(RefusedByField, refusedByEgress)
			dialog.WriteRefusal(w, body, err)
			return nil
		}
		body, ctx = offer.body, offer.ctx
	}
	target := *rt.upstream
	if rest != "" {
		target.Path = strings.TrimSuffix(target.Path, "/") + rest
		target.RawPath = ""
	}
	if target.Path == "" {
		target.Path = "/"
	}
	target.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "the request cannot be forwarded")
	}
	if len(body) == 0 {
		out.Body, out.GetBody, out.ContentLength = http.NoBody, nil, 0
	}
	// The agent's request is the egress's own and is not read again: its fields are
	// trimmed in place rather than copied (agent.Transport copies them to sign).
	out.Header = r.Header
	removeHopByHop(out.Header)
	removePrefixed(out.Header)
	removeAnySpelling(out.Header, credentialNames)
	if rt.proof == proof.WPT {
		out.Header.Del("Authorization") // the WPT travels there (wpt.AuthScheme)
	}
	if rt.link != nil {
		// The link reads the answer whole and writes it before it returns.
		if err := rt.link.serve(ctx, w, out, dc, start); err != nil {
			return wait.refusal(err)
		}
		return nil
	}
	if offer != nil || cancelHop != "" {
		hostproto.ListExtension(rt.handoff.host, out.Header)
	}
	var res *http.Response
	switch {
	case start:
		res, _, err = rt.agent.Start(ctx, out, startDLG)
	case dc != nil:
		res, err = rt.agent.Continue(ctx, out, dc, prov)
	default:
		res, err = rt.agent.Client.Do(out)
	}
	if err != nil {
		return wait.refusal(upstreamError(err))
	}
	defer res.Body.Close()
	if offer != nil {
		offer.remember(body) // the delegate may take the hop from here on: it can be canceled
	}
	if offer == nil && cancelHop == "" && !rt.signed && canFlush(w) {
		// Nothing is computed over this body: it goes to the agent as it comes. A
		// signed response that was not required is verified whole by agent.Transport
		// before it gets here. From its header on, the idle bound replaces the wait.
		if err := wait.answered(); err != nil {
			return err
		}
		removePrefixed(res.Header)
		e.noteUpstreamRefusal(r, res, nil)
		e.stream.pass(w, r, res, cancel)
		return nil
	}
	resBody, err := readBounded(res.Body, "upstream response")
	if err != nil {
		return wait.refusal(errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream's response is not usable"))
	}
	if err := wait.answered(); err != nil {
		return err
	}
	// The proxy's fields in a response are the egress's own, never the upstream's.
	removePrefixed(res.Header)
	if offer != nil {
		if err := offer.answer(ctx, res, resBody); err != nil {
			return err
		}
	}
	if cancelHop != "" {
		res.Header.Set(HandoffHopField, cancelHop)
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

// upstreamError keeps the code of a rejection (the agent package's, the TTS's, the
// WIT issuer's) and names a failure without one as upstream_unavailable.
func upstreamError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	if errcode.CodeOf(err) != errcode.Unmapped {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream exchange ended early")
	}
	return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream could not be reached")
}

// DefaultUpstreamTimeout is the default of EgressConfig.UpstreamTimeout and
// IngressConfig.UpstreamTimeout: how long the proxy waits for its upstream's answer, its
// response header and, for a response read whole, its body. Agent workloads answer
// slowly: an LLM-backed MCP tool or an A2A agent answering message/send blocking often
// takes a minute or more, and the agents' SDKs wait at least that long themselves (the
// TypeScript MCP SDK 60 s by default, longer with progress). Five minutes lets such a
// call through while the agent's own timeout, normally shorter, decides, and still
// frees the request, its connection and the application's work within minutes when an
// upstream hangs. It is DefaultStreamIdleTimeout too: a streamed answer may be silent
// as long as one read whole may take to come.
const DefaultUpstreamTimeout = 5 * time.Minute

// answerWriteTimeout is the time the proxy's write deadline leaves for writing an
// answer once the upstream's is in, or once the wait for it ran out: as long as package
// httpserver's WriteTimeout gives a whole exchange.
const answerWriteTimeout = 30 * time.Second

// upstreamWaitOf is the wait a configuration gives: d, def when d is 0; negative is
// refused.
func upstreamWaitOf(d, def time.Duration, what string) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, errcode.New(errcode.InvalidRequest, "%s: the upstream timeout must not be negative", what)
	case d == 0:
		return def, nil
	}
	return d, nil
}

// upstreamWait bounds one request's wait for its upstream's answer and keeps the
// proxy's own write deadline past it. The server's WriteTimeout (httpserver's, from the
// end of the request headers to the end of the response) would otherwise cut off every
// upstream slower than it, and, were the wait as long, close the connection at the
// moment the wait runs out, so that the client got a reset instead of
// upstream_unavailable. The read deadline stays: the request is read whole before the
// wait starts.
type upstreamWait struct {
	wait    time.Duration // the wait given: the configured one, or less to the request's deadline
	timer   *time.Timer
	reqCtx  context.Context
	rc      *http.ResponseController
	inTime  bool // ended before it ran out
	stopped bool
}

// waitUpstream starts the wait for r's upstream: limit, or up to r's own deadline when
// that comes first. When it runs out, cancel ends the exchange. rc's write deadline
// moves to the end of the wait and answerWriteTimeout after it.
func waitUpstream(rc *http.ResponseController, r *http.Request, limit time.Duration, cancel context.CancelFunc) *upstreamWait {
	now := time.Now()
	end := now.Add(limit)
	if dl, ok := r.Context().Deadline(); ok && dl.Before(end) {
		end = dl
	}
	uw := &upstreamWait{wait: end.Sub(now), reqCtx: r.Context(), rc: rc}
	// A writer that cannot move it (none of the proxies' own) keeps the server's.
	_ = rc.SetWriteDeadline(end.Add(answerWriteTimeout))
	uw.timer = time.AfterFunc(uw.wait, cancel)
	return uw
}

// end ends the wait, and reports whether it ended before it ran out.
func (uw *upstreamWait) end() bool {
	if !uw.stopped {
		uw.stopped = true
		uw.inTime = uw.timer.Stop()
	}
	return uw.inTime
}

// answered ends the wait with the upstream's answer in hand, and leaves
// answerWriteTimeout to write it; the wait's error when it ran out first (the exchange
// was canceled then).
func (uw *upstreamWait) answered() error {
	if !uw.end() {
		return uw.ranOut(nil)
	}
	_ = uw.rc.SetWriteDeadline(time.Now().Add(answerWriteTimeout))
	return nil
}

// refusal ends the wait and gives the error to answer for err, a failure of the
// exchange: upstream_unavailable saying the wait ran out when it did (err is then its
// consequence), else err. A failure with a code of its own, a token service's that the
// egress was waiting for when the wait ran out (tts_unavailable, as_unavailable), keeps
// it: it names what did not answer.
func (uw *upstreamWait) refusal(err error) error {
	ranOut := !uw.end() || errors.Is(uw.reqCtx.Err(), context.DeadlineExceeded)
	if code := errcode.CodeOf(err); ranOut && (code == errcode.Unmapped || code == errcode.UpstreamUnavailable) {
		return uw.ranOut(err)
	}
	return err
}

func (uw *upstreamWait) ranOut(err error) error {
	return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream exchange did not complete within %s", uw.wait.Round(time.Millisecond))
}
