package demo

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// What a call carried or returned, as the hops name it (and the glossary explains).
const (
	LabelWITProof      = "WIT+proof"
	LabelTxnToken      = "Txn-Token"
	LabelDialogContext = "Dialog-Context"
	LabelProvenance    = "provenance"
	LabelAccessToken   = "access token"
	LabelJWTGrant      = "JWT grant"
	LabelIDToken       = "ID token"
	LabelIDJAG         = "ID-JAG"
	LabelHandoffOffer  = "handoff offer"
	LabelHandoffStatus = "signed handoff status"
	LabelSubjectToken  = "self-signed subject token"
	LabelWITRequest    = "signed WIT request (public key)"
	LabelWIT           = "WIT"
	LabelSigned        = "signed response"
)

// Service kinds: what a host of the run is. A TTS and its authorization server share
// a host and a token endpoint; which one a call reached is read from the request.
const (
	kindWITIssuer = "WIT issuer"
	kindTTS       = "TTS"
	kindAS        = "AS"
)

// maxObserved bounds the bodies the wire observer reads (every body of the demo is a
// few kilobytes).
const maxObserved = 1 << 20

// call is one request of a workload as the wire observer saw it.
type call struct {
	from, to         string
	step             int
	carries, returns []string
	refused          bool
}

// wire sees every request of the demo's workloads as it leaves (after the agent
// transports signed it and added the tokens, before the domain-B recorder): who sent
// it, to whom, what it carried and what came back. The Hops are made from it.
type wire struct {
	mu    sync.Mutex
	calls []call
	// hosts names the participants that are servers, by host: a workload ("A2") or a
	// service (kind and domain letter).
	hosts map[string]endpoint
	// step is the number of the step running now.
	step func() int
}

type endpoint struct{ kind, name, letter string }

func (w *wire) addHost(rawURL string, e endpoint) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hosts == nil {
		w.hosts = map[string]endpoint{}
	}
	w.hosts[u.Host] = e
}

func (w *wire) endpoint(host string) (endpoint, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.hosts[host]
	return e, ok
}

// client is an HTTP client for the workload named from, over base's transport, whose
// calls the wire records.
func (w *wire) client(from string, base *http.Client) *http.Client {
	return &http.Client{Transport: w.transport(from, base.Transport), Timeout: base.Timeout}
}

func (w *wire) transport(from string, base http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		out, body, err := readRequest(r)
		if err != nil {
			return nil, err
		}
		e, known := w.endpoint(r.URL.Host)
		c := call{from: from, to: r.URL.Host, step: w.step()}
		if known {
			c.to = e.name
		}
		c.to, c.carries = classifyRequest(e, c.to, out.Header, body)
		res, err := base.RoundTrip(out)
		if err != nil {
			c.refused = true
			w.add(c)
			return nil, err
		}
		rb, rerr := io.ReadAll(io.LimitReader(res.Body, maxObserved))
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(rb))
		c.refused = rerr != nil || res.StatusCode >= 400
		if !c.refused {
			c.returns = classifyResponse(e, res.Header, rb)
		}
		w.add(c)
		return res, rerr
	})
}

func (w *wire) add(c call) {
	w.mu.Lock()
	w.calls = append(w.calls, c)
	w.mu.Unlock()
}

// readRequest reads r's body (a RoundTripper must not modify the caller's request:
// the request passed on is a clone when it has one).
func readRequest(r *http.Request) (*http.Request, []byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, nil, nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return out, b, nil
}

// classifyRequest names what a request carried, from its header fields and body, and
// the participant it reached: at a TTS's host, the TTS for a Txn-Token request, its
// authorization server (AS) for an identity-chaining grant or a jwt-bearer grant.
func classifyRequest(e endpoint, to string, h http.Header, body []byte) (string, []string) {
	var l []string
	if h.Get(wit.HeaderName) != "" && (h.Get("Signature") != "" || h.Get(wpt.LegacyHeader) != "" || strings.HasPrefix(h.Get("Authorization"), wpt.AuthScheme+" ")) {
		l = append(l, LabelWITProof)
	}
	if h.Get(txntoken.HeaderName) != "" {
		l = append(l, LabelTxnToken)
	}
	if h.Get(dialog.HeaderName) != "" {
		l = append(l, LabelDialogContext)
	}
	if h.Get(dialog.ProvenanceHeader) != "" {
		l = append(l, LabelProvenance)
	}
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
		l = append(l, LabelAccessToken)
	}
	switch e.kind {
	case kindWITIssuer:
		if len(body) > 0 {
			l = append(l, LabelWITRequest)
		}
	case kindTTS:
		form, _ := url.ParseQuery(string(body))
		switch {
		case form.Get("grant_type") == chaining.GrantTypeJWTBearer:
			to = kindAS + " " + e.letter
			l = append(l, grantLabel(form.Get("assertion")))
		case form.Get("requested_token_type") == chaining.TokenTypeJWT || form.Get("requested_token_type") == chaining.TokenTypeIDJAG:
			to = kindAS + " " + e.letter
		}
		switch form.Get("subject_token_type") {
		case oauth.TokenTypeTxnToken, oauth.TokenTypeTxnToken08:
			l = append(l, LabelTxnToken)
		case oauth.TokenTypeAccessToken:
			l = append(l, LabelAccessToken)
		case oauth.TokenTypeSelfSigned:
			l = append(l, LabelSubjectToken)
		case chaining.TokenTypeIDToken:
			l = append(l, LabelIDToken)
		}
	default:
		if hasHandoffOffer(body) {
			l = append(l, LabelHandoffOffer)
		}
	}
	return to, dedup(l)
}

// grantLabel names the grant of a jwt-bearer request by its typ header (read, not
// verified: AS B verifies it): an ID-JAG, or the generic JWT grant.
func grantLabel(assertion string) string {
	if t, err := jose.Parse(assertion, chaining.MaxAssertion); err == nil && jose.TypeMatches(t.Typ, chaining.IDJAGTyp) {
		return LabelIDJAG
	}
	return LabelJWTGrant
}

// classifyResponse names what an answer carried.
func classifyResponse(e endpoint, h http.Header, body []byte) []string {
	var l []string
	switch e.kind {
	case kindWITIssuer:
		var r struct {
			WIT string `json:"wit"`
		}
		if json.Unmarshal(body, &r) == nil && r.WIT != "" {
			l = append(l, LabelWIT)
		}
	case kindTTS:
		var r struct {
			IssuedTokenType string `json:"issued_token_type"`
			TokenType       string `json:"token_type"`
		}
		if json.Unmarshal(body, &r) == nil {
			switch {
			case r.IssuedTokenType == oauth.TokenTypeTxnToken || r.IssuedTokenType == oauth.TokenTypeTxnToken08:
				l = append(l, LabelTxnToken)
			case r.IssuedTokenType == chaining.TokenTypeJWT:
				l = append(l, LabelJWTGrant)
			case r.IssuedTokenType == chaining.TokenTypeIDJAG:
				l = append(l, LabelIDJAG)
			case r.IssuedTokenType == oauth.TokenTypeAccessToken || strings.EqualFold(r.TokenType, "bearer"):
				l = append(l, LabelAccessToken)
			}
		}
	}
	if h.Get("Signature") != "" {
		l = append(l, LabelSigned)
	}
	if h.Get(dialog.HeaderName) != "" {
		l = append(l, LabelDialogContext)
	}
	if _, err := taskStatus(body); err == nil {
		l = append(l, LabelHandoffStatus)
	}
	return dedup(l)
}

// hasHandoffOffer reports whether body is an A2A JSON-RPC request whose message
// carries a handoff offer (handoff-context section 6).
func hasHandoffOffer(body []byte) bool {
	var rpc struct {
		Params struct {
			Message json.RawMessage `json:"message"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &rpc) != nil || len(rpc.Params.Message) == 0 {
		return false
	}
	h, err := handoff.A2AMessageHandoff(rpc.Params.Message)
	return err == nil && h != nil
}

func dedup(l []string) []string {
	var out []string
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// hops folds the calls into one Hop per (from, to), in the order of each pair's first
// call; domain maps a participant's name to its trust domain.
func (w *wire) hops(domain func(string) string) []Hop {
	w.mu.Lock()
	defer w.mu.Unlock()
	var hs []Hop
	index := map[[2]string]int{}
	for _, c := range w.calls {
		k := [2]string{c.from, c.to}
		i, ok := index[k]
		if !ok {
			fd, td := domain(c.from), domain(c.to)
			hs = append(hs, Hop{From: c.from, To: c.to, FromDomain: fd, ToDomain: td, CrossesBoundary: fd != td,
				Carries: []string{}, Returns: []string{}, Steps: []int{}})
			i = len(hs) - 1
			index[k] = i
		}
		h := &hs[i]
		h.Requests++
		if c.refused {
			h.Refused++
		}
		h.Carries = dedup(append(h.Carries, c.carries...))
		h.Returns = dedup(append(h.Returns, c.returns...))
		if !slices.Contains(h.Steps, c.step) {
			h.Steps = append(h.Steps, c.step)
		}
	}
	return hs
}
