package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
)

// Handler serves one grant at the token endpoint (in the style of fosite: one handler
// per grant behind one endpoint, which authenticates the client once). The Endpoint
// reads and parses the body once, hands the request to the first handler that matches
// it, and runs it through the handler's steps in a fixed order: Check, then client
// authentication as the handler's ClientAuth says, then Handle, then Done.
type Handler interface {
	// Name labels the handler's outcomes (Record.Handler; metrics and logs).
	Name() string
	// Match reports whether the handler serves tr. It looks at grant_type,
	// requested_token_type, audience and resource only.
	Match(tr *TokenRequest) bool
	// Check applies the grant's own parameter rules to the parsed request (bounds,
	// REQUIRED parameters, grant and token types). It runs before the client is
	// authenticated: these checks are cheap and stateless, so a malformed request is
	// refused before any signature is verified or a replay store written. It may
	// record what the log line says of the request in rec. Every error is an
	// *errcode.Error, marked with its Stage (At).
	Check(tr *TokenRequest, rec *Record) error
	// ClientAuth is how the grant's clients authenticate; the endpoint runs it after
	// Check and before Handle. It is the same for every request (NewEndpoint checks
	// that every handler has one).
	ClientAuth() *ClientAuth
	// Handle serves one checked token request of an authenticated client: the grant
	// itself, its policy last before its side effects. r.Body is a fresh reader over
	// the body (for Content-Digest). It records what its log line and metrics need in
	// rec. Every error is an *errcode.Error, marked with its Stage (At).
	Handle(ctx context.Context, r *http.Request, tr *TokenRequest, client *Client, rec *Record) (Response, error)
	// Done is told the outcome, once it is mapped and before it is written: the
	// handler's log line.
	Done(ctx context.Context, r *http.Request, rec *Record)
}

// Record is one token request's outcome, for the handler's log line and the Observer.
type Record struct {
	// Handler is the Name of the handler that answered.
	Handler   string
	RequestID string
	Start     time.Time
	Duration  time.Duration
	// Request is the parsed request (nil when it was refused before it parsed).
	Request *TokenRequest
	// Response is the answer when one was issued.
	Response Response
	// Err is the rejection (nil when issued); an error without a code is already
	// wrapped as errcode.Internal. Error and Status are its OAuth error and status
	// (ErrorFor), Code its errcode.
	Err    error
	Error  string
	Status int
	Code   errcode.Code

	// Set by the handler as the request goes: the grant label ("token_exchange",
	// "replacement", ...), the subject token type, the authentication method tried,
	// the authenticated client, the peer authorization server.
	Grant, SubjectTokenType, Method, Requester, Peer string
	// SubjectSHA256 is the presented token's hash (tokenhash.Of) when the
	// handler knows it already; Detail is the handler's own (what else its log line
	// says).
	SubjectSHA256 string
	// KID is the key that signed the issued token.
	KID string
	// Rule names the policy rule that decided (the decision log), when one did.
	Rule string
	// Token is room for a handler's TokenResponse (Handle may return &rec.Token), so
	// that the Txn-Token response costs no allocation of its own.
	Token  TokenResponse
	Detail any
}

// Observer is told every outcome of the endpoint (issued when Err is nil, refused
// otherwise), after the handler's Done: metrics.
type Observer interface {
	Observe(rec *Record)
}

// EndpointConfig configures an Endpoint.
type EndpointConfig struct {
	// Fallback serves every request no other handler matches, and every request
	// refused before it parsed (Content-Type, body, form): it answers what nobody
	// serves (unsupported_grant_type, unsupported_token_type, a repeated parameter).
	Fallback Handler
	// Handlers are asked in order.
	Handlers []Handler
	// MaxBodySize bounds the body (default and maximum DefaultMaxBodySize).
	MaxBodySize int64
	// Observer, when set, is told every outcome.
	Observer Observer
	// Auditor, when set, records every outcome before it is sent (audit.go).
	Auditor Auditor
}

// Endpoint is the token endpoint (RFC 6749 section 3.2): an http.Handler for POST that
// reads the bounded form body once, parses it once (ParseTokenRequest's rules),
// dispatches to the grant handler that matches, authenticates the client once as that
// handler says (after its Check, before its Handle), then writes the handler's response
// or the RFC 6749 section 5.2 error document (ErrorFor).
type Endpoint struct {
	cfg EndpointConfig
}

// NewEndpoint checks cfg.
func NewEndpoint(cfg EndpointConfig) (*Endpoint, error) {
	if cfg.Fallback == nil {
		return nil, fmt.Errorf("oauth: a token endpoint needs a fallback handler")
	}
	for _, h := range append([]Handler{cfg.Fallback}, cfg.Handlers...) {
		if h == nil {
			return nil, fmt.Errorf("oauth: a nil grant handler")
		}
		if a := h.ClientAuth(); a == nil || len(a.Authenticators) == 0 {
			return nil, fmt.Errorf("oauth: grant handler %s has no client authentication", h.Name())
		}
	}
	if cfg.MaxBodySize <= 0 || cfg.MaxBodySize > DefaultMaxBodySize {
		cfg.MaxBodySize = DefaultMaxBodySize
	}
	return &Endpoint{cfg: cfg}, nil
}

// Handlers returns the handlers other than the fallback, in order.
func (e *Endpoint) Handlers() []Handler { return e.cfg.Handlers }

// route picks the handler for a parsed request.
func (e *Endpoint) route(tr *TokenRequest) Handler {
	for _, h := range e.cfg.Handlers {
		if h.Match(tr) {
			return h
		}
	}
	return e.cfg.Fallback
}

// ServeHTTP implements http.Handler.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The record, the parsed request and the body's reader in one allocation.
	both := &struct {
		rec  Record
		tr   TokenRequest
		body bodyReader
	}{}
	rec := &both.rec
	rec.Start, rec.RequestID = time.Now(), reqid.Set(w, r)
	ctx := r.Context()
	h := e.cfg.Fallback
	tr, err := e.read(w, r, &both.tr, &both.body)
	if err == nil {
		h = e.route(tr)
	}
	rec.Handler, rec.Request = h.Name(), tr
	var resp Response
	if err == nil {
		err = h.Check(tr, rec)
	}
	var client *Client
	if err == nil {
		client, err = h.ClientAuth().authenticate(ctx, r, tr, rec)
	}
	if err == nil {
		resp, err = h.Handle(ctx, r, tr, client, rec)
	}
	if err != nil {
		if errcode.CodeOf(err) == errcode.Unmapped {
			// A failure without a code is ours, not the caller's; its text stays in
			// the log and out of the response.
			err = errcode.Wrap(errcode.Internal, err, "internal error")
		}
		rec.Err, rec.Code = err, errcode.CodeOf(err)
		rec.Error, rec.Status = ErrorFor(err)
	} else {
		rec.Response, rec.Status = resp, http.StatusOK
	}
	if e.cfg.Auditor != nil {
		if aerr := e.audit(rec); aerr != nil {
			err, resp = aerr, nil
		}
	}
	rec.Duration = time.Since(rec.Start)
	h.Done(ctx, r, rec)
	if e.cfg.Observer != nil {
		e.cfg.Observer.Observe(rec)
	}
	if err != nil {
		WriteErrorAs(w, r, err, rec.Error, rec.Status)
		return
	}
	hint := 512
	if t, ok := resp.(interface{ SizeHint() int }); ok {
		hint = t.SizeHint()
	}
	WriteResponse(w, resp, hint)
}

// read checks the Content-Type, reads the bounded body once, puts a reader over it back
// for the authenticators (Content-Digest), br, and parses it into tr.
func (e *Endpoint) read(w http.ResponseWriter, r *http.Request, tr *TokenRequest, br *bodyReader) (*TokenRequest, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" && !isFormType(ct) {
		return nil, At(StageRequest, errcode.New(errcode.InvalidRequest, "Content-Type must be application/x-www-form-urlencoded"))
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body, err := readBody(w, r, e.cfg.MaxBodySize)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, At(StageRequest, errcode.New(errcode.BodyTooLarge, "body over %d octets", e.cfg.MaxBodySize))
		}
		return nil, At(StageRequest, errcode.Wrap(errcode.InvalidRequest, err, "reading the body"))
	}
	br.Reset(body)
	r.Body = br
	r.ContentLength = int64(len(body))
	// The body is read-only from here on (the authenticators get a reader over it), so
	// the request is parsed from a string view of it rather than a copy.
	if err := parseInto(tr, unsafe.String(unsafe.SliceData(body), len(body))); err != nil {
		return nil, At(StageRequest, err)
	}
	return tr, nil
}

// parses counts the token request bodies parsed (ParseCount).
var parses atomic.Uint64

// ParseCount is the number of token request bodies parsed in this process: a
// diagnostic, with which the endpoint's tests show that each request is parsed once
// whichever grant serves it.
func ParseCount() uint64 { return parses.Load() }

// bodyReader is the body put back for the authenticators: a reader over the octets
// already read, whose Close does nothing (io.NopCloser of a bytes.Reader, in one
// allocation).
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

func isFormType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// readBody reads the bounded body, in one allocation when Content-Length is given.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= max {
		// Under the bound, reading the declared length and one octet more can never
		// reach it, so http.MaxBytesReader would pass every read through unchanged:
		// the body is read directly. At exactly the bound it is kept, for what it does
		// when the octet past the bound arrives.
		var rd io.Reader = r.Body
		if n == max {
			rd = http.MaxBytesReader(w, r.Body, max)
		}
		// One octet of room past the declared length, for the read that checks that
		// nothing follows it.
		b := make([]byte, n+1)
		if _, err := io.ReadFull(rd, b[:n]); err != nil {
			return nil, err
		}
		if m, _ := rd.Read(b[n:]); m != 0 {
			return nil, errcode.New(errcode.InvalidRequest, "body longer than Content-Length")
		}
		return b[:n:n], nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}
