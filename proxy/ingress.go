package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/internal/httpbody"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// IngressConfig configures an Ingress.
type IngressConfig struct {
	// Receiver runs the checks of section 12: the proof methods and their replay
	// store, the Txn-Token verifier, stateful (dialog.WithRegistry) or stateless, the
	// response signer (dialog.WithResponseSigner), handoffs (dialog.WithHandoffs).
	Receiver *dialog.Receiver
	// Upstream is the application's base URL (https, or http to loopback unless
	// AllowPlainHTTP), or unix:///path/app.sock: the application listens on that Unix
	// domain socket (local, like loopback) and UpstreamPath is its base path (default
	// "/"). UpstreamPath is only for a Unix socket upstream.
	Upstream       string
	UpstreamPath   string
	AllowPlainHTTP bool
	// Handoffs is the handoff receiver given to dialog.WithHandoffs: the ingress takes
	// the hop of an accepted offer with it and signs the statuses the application's
	// answer states (handoff_ingress.go). Required when the receiver checks handoffs.
	Handoffs *handoff.Receiver
	// Transport carries the verified requests to the application (default: a
	// transport without an environment proxy, keeping MaxIdleConnsPerUpstream idle
	// connections, which dials the socket of a Unix socket upstream). A Unix socket
	// upstream takes the default.
	Transport http.RoundTripper
	// Boundary, when set, makes the ingress face a trust boundary: callers send an
	// access token of this domain in a linked dialog, never a Txn-Token (boundary.go).
	Boundary *BoundaryIngress
	// ForwardProvenance hands the application, in VerifiedProvenanceField, the
	// provenance it needs to forward this hop's proof when it calls on in the dialog
	// (section 9). Off by default: the value holds the signature bases of earlier hops,
	// and with them the sender's WIT and Txn-Token, which the ingress otherwise keeps
	// from the application.
	ForwardProvenance bool
	// StreamIdleTimeout bounds the wait between two reads of a response passed through
	// as it comes (stream.go; default DefaultStreamIdleTimeout).
	StreamIdleTimeout time.Duration
	// UpstreamTimeout bounds the wait for the application to answer (default
	// DefaultUpstreamTimeout).
	UpstreamTimeout time.Duration
	// Log receives each refusal, the receiver's included, with its stable code and the
	// hash of the caller's WIT (refusal.go), and what cannot be answered to the caller:
	// a passed-through response that broke off after its header went out (default:
	// discarded).
	Log *slog.Logger
}

// Ingress is the reverse proxy in front of the agent's own server: it verifies every
// request with the Receiver and forwards only verified ones, with what was verified
// in the Verified* fields. Every field with FieldPrefix that a client sent is removed
// first, whatever happens next.
type Ingress struct {
	upstream *url.URL
	// transport carries the forwarded requests; a redirect goes back to the client as
	// it is, never followed.
	transport http.RoundTripper
	handler   http.Handler
	boundary  *BoundaryIngress
	// forwardProvenance: IngressConfig.ForwardProvenance.
	forwardProvenance bool
	handoffs          *handoff.Receiver
	stream            streamer
	// wait bounds the wait for the application's answer (IngressConfig.UpstreamTimeout).
	wait time.Duration
	// receiver writes the ingress's refusals (its 401s' challenge); metadata is its
	// protected resource metadata, served here (ingress_metadata.go).
	receiver *dialog.Receiver
	metadata *ingressMetadata
}

// NewIngress checks cfg and builds the ingress.
func NewIngress(cfg IngressConfig) (*Ingress, error) {
	if cfg.Receiver == nil {
		return nil, errcode.New(errcode.InvalidRequest, "ingress: a receiver is required")
	}
	up, socket, err := ingressUpstream(cfg.Upstream, cfg.UpstreamPath, cfg.AllowPlainHTTP)
	if err != nil {
		return nil, err
	}
	if socket != "" && cfg.Transport != nil {
		return nil, errcode.New(errcode.InvalidRequest, "ingress: a Unix socket upstream is reached by the ingress's own transport")
	}
	if cfg.Boundary != nil {
		if err := cfg.Boundary.check(); err != nil {
			return nil, err
		}
	}
	stream, wait, err := sideWaits(cfg.StreamIdleTimeout, cfg.UpstreamTimeout, cfg.Log, "ingress")
	if err != nil {
		return nil, err
	}
	tr := cfg.Transport
	if tr == nil {
		tr = ingressTransport(socket)
	}
	in := &Ingress{upstream: up, transport: tr, boundary: cfg.Boundary, handoffs: cfg.Handoffs, forwardProvenance: cfg.ForwardProvenance, stream: stream, wait: wait,
		receiver: cfg.Receiver, metadata: metadataOf(cfg.Receiver)}
	in.handler = cfg.Receiver.Middleware(http.HandlerFunc(in.forward))
	return in, nil
}

// UnixUpstreamScheme starts an ingress upstream on a Unix domain socket:
// unix:///run/app/app.sock.
const UnixUpstreamScheme = "unix://"

// unixUpstreamHost is the host of the URLs of the requests to an application on a Unix
// socket; their Host field is the caller's, as on TCP.
const unixUpstreamHost = "localhost"

// CheckIngressUpstream checks the application's address behind an ingress: an upstream
// URL as CheckUpstream takes it (httpPath empty), or unix:///path/app.sock, an absolute
// socket path in normal form, with httpPath the application's base path ("" is "/").
func CheckIngressUpstream(raw, httpPath string, plainHTTP bool) error {
	_, _, err := ingressUpstream(raw, httpPath, plainHTTP)
	return err
}

// ingressUpstream is CheckIngressUpstream's reading: the base URL requests are built
// on and, for a Unix socket upstream, the socket's path.
func ingressUpstream(raw, httpPath string, plainHTTP bool) (*url.URL, string, error) {
	socket, ok := strings.CutPrefix(raw, UnixUpstreamScheme)
	if !ok {
		if httpPath != "" {
			return nil, "", errcode.New(errcode.InvalidRequest, "upstream %q: a base path of its own is only for a Unix socket upstream (put it in the URL)", errcode.Cut(raw))
		}
		up, err := CheckUpstream(raw, plainHTTP)
		return up, "", err
	}
	if !strings.HasPrefix(socket, "/") || path.Clean(socket) != socket || strings.ContainsAny(socket, "?#%") {
		return nil, "", errcode.New(errcode.InvalidRequest, "upstream %q: a Unix socket is named by an absolute path in normal form (unix:///run/app.sock)", errcode.Cut(raw))
	}
	if httpPath == "" {
		httpPath = "/"
	}
	if !normalPath(httpPath) || strings.ContainsAny(httpPath, "?#%") {
		return nil, "", errcode.New(errcode.InvalidRequest, "upstream path %q must be an absolute path in normal form", errcode.Cut(httpPath))
	}
	return &url.URL{Scheme: "http", Host: unixUpstreamHost, Path: httpPath}, socket, nil
}

// ServeHTTP removes the proxy's fields a client sent, bounds the body, and runs the
// receiver; only a verified request reaches the application. The body is not read
// here: the receiver reads it once every field check passed (dialog's order of the
// checks), so a request it refuses has none of its body read and, with Expect:
// 100-continue, gets no 100 Continue.
func (in *Ingress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Always first: a copy of a Verified* field from the client must never reach the
	// application, whether or not the request verifies, in any spelling it reads.
	cleanIngressRequest(r.Header)
	if in.receiver.Audits() {
		// One request id for the receiver's record and the ingress's own (refuse).
		r = r.WithContext(dialog.WithRequestID(r.Context(), reqid.Set(w, r)))
	}
	r = in.withRefusalLog(r)
	if !normalPath(r.URL.Path) {
		// A dot segment could leave the application's base path once appended to it.
		in.refuse(w, r, errcode.New(errcode.InvalidRequest, "the path is not in normal form"))
		return
	}
	if in.serveMetadata(w, r) {
		return // public, and never the application's
	}
	// The receiver's writer may hold the response to sign it, and cannot move the
	// connection's write deadline: forward moves it on w itself. And the handlers get
	// a copy of r, so that boundBody's reader goes on the copy: net/http tells an
	// unanswered Expect: 100-continue by the Body of its own *Request, and would read
	// (and so send 100 Continue) to discard a body it does not recognize.
	r = r.WithContext(context.WithValue(r.Context(), connWriterKey{}, w))
	if err := boundBody(w, r); err != nil {
		in.refuse(w, r, err)
		return
	}
	if in.boundary != nil {
		if err := in.boundary.precheck(r); err != nil {
			in.refuse(w, r, err)
			return
		}
	}
	in.handler.ServeHTTP(w, r)
}

// connWriterKey is the context key of the ingress's own writer (ServeHTTP's w).
type connWriterKey struct{}

// connController is the controller of the connection's writer for r: the ingress's
// own writer, else w.
func connController(w http.ResponseWriter, r *http.Request) *http.ResponseController {
	if cw, ok := r.Context().Value(connWriterKey{}).(http.ResponseWriter); ok {
		w = cw
	}
	return http.NewResponseController(w)
}

// forwardBody is the body r carries now: the octets the receiver checked and put back
// (the HTTP signature's or a bound WPT's Content-Digest), or, when nothing checked it,
// the body as it comes, read only now that the request is verified (bounded by
// boundBody).
func forwardBody(r *http.Request) ([]byte, error) {
	return httpbody.Read(r.Body, MaxBody, "request body")
}

// forward runs after the receiver verified r; a refusal at any of its steps
// (forwardVerified) is answered here.
func (in *Ingress) forward(w http.ResponseWriter, r *http.Request) {
	if err := in.forwardVerified(w, r); err != nil {
		in.refuse(w, r, err)
	}
}

// forwardVerified takes a verified request through its steps: the access token of a
// linked dialog (boundaryIngress.accept), the body, the request to the application
// (outgoing), the hop of an accepted offer (takeHop), the exchange within the wait for
// the application's answer, and the answer (answer). Nothing is written to w before
// the last step, so that a refusal from any step is answered whole.
func (in *Ingress) forwardVerified(w http.ResponseWriter, r *http.Request) error {
	v := dialog.FromRequest(r)
	if v == nil {
		return errcode.New(errcode.Internal, "the ingress forwarded a request the receiver did not verify")
	}
	if in.boundary != nil {
		var err error
		if v, err = in.boundary.accept(r, v); err != nil {
			return err
		}
	}
	body, err := forwardBody(r)
	if err != nil {
		return err
	}
	// The exchange with the application ends with the caller's request, or earlier when
	// a response passed through as it comes goes idle (streamer.pass).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out, err := in.outgoing(ctx, r, v, body)
	if err != nil {
		return err
	}
	var taken *ingressHop
	if v.Handoff != nil && v.Handoff.Outcome == handoff.OutcomeAccepted {
		if taken, err = in.takeHop(r.Context(), v, body); err != nil {
			return err
		}
	}
	// The exchange with the application ends, too, when the wait for its answer runs
	// out (upstreamWait).
	wait := waitUpstream(connController(w, r), r, in.wait, cancel)
	defer wait.end()
	// The transport itself, not an http.Client: the client's redirect machinery copies
	// every request's fields for a redirect that is never followed here.
	res, err := in.transport.RoundTrip(out)
	if err != nil {
		return wait.refusal(upstreamError(err))
	}
	defer res.Body.Close()
	return in.answer(w, r, v, res, taken, wait, cancel)
}

// outgoing builds the request to the application: the upstream URL with the caller's
// path and query, the body, and the caller's fields without the hop-by-hop ones, the
// proxies' namespace and the credentials (what they proved travels in the Verified*
// fields, setVerified), with the Host the caller sent.
func (in *Ingress) outgoing(ctx context.Context, r *http.Request, v *dialog.Verified, body []byte) (*http.Request, error) {
	target := *in.upstream
	target.Path = strings.TrimSuffix(target.Path, "/") + r.URL.Path
	target.RawPath = ""
	target.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "the request cannot be forwarded")
	}
	if len(body) == 0 {
		out.Body, out.GetBody, out.ContentLength = http.NoBody, nil, 0
	}
	out.Header = r.Header.Clone()
	removeHopByHop(out.Header)
	cleanIngressRequest(out.Header)
	// The credentials stay here: what they proved travels in the Verified* fields.
	for _, f := range []string{wit.HeaderName, txntoken.HeaderName, dialog.ProvenanceHeader, "Signature", "Signature-Input", wpt.LegacyHeader} {
		out.Header.Del(f)
	}
	if in.boundary != nil {
		out.Header.Del("Authorization") // the access token of the linked dialog
	}
	if a := out.Header.Get("Authorization"); len(a) > len(wpt.AuthScheme) && strings.EqualFold(a[:len(wpt.AuthScheme)+1], wpt.AuthScheme+" ") {
		out.Header.Del("Authorization")
	}
	if err := setVerified(out.Header, v, in.forwardProvenance); err != nil {
		return nil, err
	}
	if host := r.Host; host != "" {
		// The application sees the Host its caller sent (issue 22 point 6): its own
		// DNS-rebinding protection and its virtual hosts judge the name it was reached
		// by, not the upstream address the ingress dials (which still picks the
		// connection and, for https, the TLS server name). X-Forwarded-Host repeats it
		// for applications that read that.
		out.Host = host
		out.Header.Set("X-Forwarded-Host", host)
	}
	return out, nil
}

// answer gives the caller the application's response. One that nothing is computed
// over goes to the caller as it comes; any other is read whole and, for a hop taken,
// the outcome the application states is signed into it (ingressHop.answer). The
// receiver echoes (and signs) the Dialog-Context on w itself, so the application's own
// Dialog-Context, signature, WIT and handoff outcome fields are not passed on.
func (in *Ingress) answer(w http.ResponseWriter, r *http.Request, v *dialog.Verified, res *http.Response, taken *ingressHop, wait *upstreamWait, cancel context.CancelFunc) error {
	if v.Handoff == nil && v.Cancel == nil && !signResponse(v) && canStream(w, res.Header) {
		// Nothing is computed over this body: it goes to the caller as it comes. The
		// receiver echoes the Dialog-Context on w itself.
		// From its header on, the idle bound replaces the wait.
		if err := wait.answered(); err != nil {
			return err
		}
		for _, f := range []string{dialog.HeaderName, "Signature", "Signature-Input", wit.HeaderName, HandoffStatusField, HandoffReasonField} {
			res.Header.Del(f)
		}
		in.stream.pass(w, r, res, cancel)
		return nil
	}
	resBody, err := httpbody.Read(res.Body, MaxBody, "application's response")
	if err != nil {
		return wait.refusal(errcode.Unavailable(errcode.UpstreamUnavailable, err, "the application's response is not usable"))
	}
	if err := wait.answered(); err != nil {
		return err
	}
	// The receiver echoes (and signs) the verified Dialog-Context itself, and a
	// signature of the application's own would make the proxy's ambiguous.
	for _, f := range []string{dialog.HeaderName, "Signature", "Signature-Input", wit.HeaderName} {
		res.Header.Del(f)
	}
	if taken != nil {
		if resBody, err = taken.answer(r.Context(), res, resBody); err != nil {
			return err
		}
	}
	res.Header.Del(HandoffStatusField)
	res.Header.Del(HandoffReasonField)
	writeResponse(w, res, resBody)
	return nil
}

// signResponse reports whether the caller asked for a signed response
// (wimse-sign-response): the signature covers the body's digest, so the body is read
// whole. A receiver with a response signer signs every response to an HTTP-signed
// request, asked or not, and holds it meanwhile, but an event stream nobody asked to
// have signed with dialog.WithStreamingUnsigned (canStream).
func signResponse(v *dialog.Verified) bool {
	return v.Signature != nil && v.Signature.SignResponse
}

// setVerified puts what the receiver verified on h, with the provenance to forward
// when forward is set.
func setVerified(h http.Header, v *dialog.Verified, forward bool) error {
	h.Set(VerifiedSenderField, v.Sender.String())
	h.Set(VerifiedProofField, v.Proof.String())
	if v.Context != nil {
		h.Set(VerifiedDialogField, v.Context.DLG())
		h.Set(VerifiedInitiatorField, v.Context.Initiator().String())
		h.Set(VerifiedInitiatorProvedField, boolText(v.InitiatorVerified))
		h.Set(VerifiedEstablishedField, boolText(v.Outcome == dialog.Established))
		// What the application needs to forward this hop's proof (section 9). A
		// request that cannot be forwarded (a WPT, Authorization covered, a full chain)
		// still reaches the application, without the field.
		if forward && v.Signature != nil {
			if p, err := v.Forward(); err == nil {
				h.Set(VerifiedProvenanceField, p.Value())
			}
		}
	}
	if v.Txn != nil {
		// The claims' own encoder: what json.Marshal would return for them (it calls
		// it), without encoding/json scanning the result again.
		b, err := v.Txn.MarshalJSON()
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "the Txn-Token claims cannot be handed on")
		}
		h.Set(VerifiedTxnTokenClaimsField, asciiJSON(b))
	}
	if v.Handoff != nil && v.Handoff.Outcome == handoff.OutcomeAccepted {
		h.Set(VerifiedHandoffField, "accepted")
		h.Set(VerifiedHandoffHopField, v.Handoff.Offer.Hop)
		h.Set(VerifiedHandoffFromField, v.Handoff.Offer.Iss)
	}
	if v.Cancel != nil && v.Cancel.Status != nil {
		// HandleCancel checked the delegator's "canceled" status and recorded the hop
		// as canceled before the request got here.
		h.Set(VerifiedHandoffCancelField, v.Cancel.Status.Hop)
		h.Set(VerifiedHandoffFromField, v.Cancel.Status.Iss)
	}
	return nil
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
