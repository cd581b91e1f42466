package httpsig

import (
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dunglas/httpsfv"
)

// This file is the one place where the RFC 9421 signature base is built, for signing and
// for verifying alike: a signer and a verifier that disagree by one byte fail, so they
// share every line of it.

// Derived components this package signs and verifies. Everything else starting with "@"
// is refused (unsupported_component): @request-target (removed in -07), @scheme and
// @query-param are never needed by the profile, and a verifier that accepts what it
// cannot rebuild exactly only produces false rejections or, worse, false acceptances.
const (
	compMethod    = "@method"
	compPath      = "@path"
	compQuery     = "@query"
	compStatus    = "@status"
	compAuthority = "@authority"
	compTargetURI = "@target-uri"
)

// maxComponents bounds the covered-component list of one signature. The profile needs at
// most a dozen; the bound keeps the work of a hostile Signature-Input linear and small.
const maxComponents = 64

// component is one covered component: a derived component or a lowercased field name,
// with the ;req flag (RFC 9421 section 2.4) for response signatures.
type component struct {
	name string
	req  bool
	key  string // canonical http.Header key of a field component, "" for derived ones
	// ident is id(), precomputed by parseComponent for the names in common ("" for
	// others, whose id() is built on demand).
	ident string
}

// id is the component identifier as it appears in Signature-Input and in the base: an
// sf-string (names never need escaping, see validName) plus ";req".
func (c component) id() string {
	if c.ident != "" {
		return c.ident
	}
	if k, ok := common[c.name]; ok {
		if c.req {
			return k.idReq
		}
		return k.id
	}
	if c.req {
		return `"` + c.name + `";req`
	}
	return `"` + c.name + `"`
}

// common holds the precomputed header key and identifiers of the components every
// request or response covers, so that verification does not allocate them each time.
var common = func() map[string]struct{ key, id, idReq string } {
	m := map[string]struct{ key, id, idReq string }{}
	for _, n := range []string{compMethod, compPath, compQuery, compStatus, compAuthority, compTargetURI,
		"content-type", "content-digest", "authorization", "txn-token", "workload-identity-token", "dialog-context",
		"dialog-provenance", "mcp-method", "mcp-name"} {
		k := ""
		if !strings.HasPrefix(n, "@") {
			k = textproto.CanonicalMIMEHeaderKey(n)
		}
		m[n] = struct{ key, id, idReq string }{k, `"` + n + `"`, `"` + n + `";req`}
	}
	return m
}()

func (c component) derived() bool { return strings.HasPrefix(c.name, "@") }

// item is the component as an RFC 8941 item, for serializing Signature-Input.
func (c component) item() httpsfv.Item {
	if c.req {
		return httpsfv.Item{Value: c.name, Params: itemParams.req}
	}
	return httpsfv.Item{Value: c.name, Params: itemParams.none}
}

// parseComponent checks one item of a covered-component list. response says whether the
// signature is over a response, where ;req is meaningful (RFC 9421 section 2.4).
//
// Malformed identifiers are parse_error; well-formed ones this profile cannot rebuild
// are unsupported_component.
func parseComponent(it httpsfv.Item, response bool) (component, error) {
	name, ok := it.Value.(string)
	if !ok {
		return component{}, errcode.New(errcode.ParseError, "a covered component is not an sf-string")
	}
	// The names every WIMSE message covers are known valid, with their header key
	// precomputed: one map lookup instead of a scan and a canonicalization.
	k, known := common[name]
	if !known && !validName(name) {
		return component{}, errcode.New(errcode.ParseError, "covered component %q is not a lowercase field name or derived component", errcode.Cut(name))
	}
	c := component{name: name}
	for _, p := range it.Params.Names() {
		v, _ := it.Params.Get(p)
		if p != "req" || v != true {
			// ;sf, ;key, ;bs, ;tr and ;name change how a value is computed; the profile
			// needs none of them (an intermediary's signature may use them, but it is
			// never parsed this far).
			return component{}, errcode.New(errcode.UnsupportedComponent, "component parameter %q on %s is not supported", errcode.Cut(p), c.id())
		}
		c.req = true
	}
	if c.req && !response {
		return component{}, errcode.New(errcode.UnsupportedComponent, "%s: ;req is only meaningful in a response signature", c.id())
	}
	if known {
		c.ident = k.id
		if c.req {
			c.ident = k.idReq
		}
	}
	if c.derived() {
		switch name {
		case compMethod, compPath, compQuery, compAuthority, compTargetURI:
			if response && !c.req {
				return component{}, errcode.New(errcode.UnsupportedComponent, "%s in a response needs ;req", c.id())
			}
		case compStatus:
			if !response || c.req {
				return component{}, errcode.New(errcode.UnsupportedComponent, "%s exists only in a response", c.id())
			}
		default:
			return component{}, errcode.New(errcode.UnsupportedComponent, "derived component %s is not supported", c.id())
		}
		return c, nil
	}
	if known {
		c.key = k.key
	} else {
		c.key = textproto.CanonicalMIMEHeaderKey(name)
	}
	return c, nil
}

// parseComponentID parses a component identifier given as its serialization, e.g.
// `"@method"` or `"@path";req` (configuration and the low-level signing API).
func parseComponentID(s string, response bool) (component, error) {
	it, err := httpsfv.UnmarshalItem([]string{s})
	if err != nil {
		return component{}, errcode.Wrap(errcode.InvalidRequest, err, "component identifier %q", errcode.Cut(s))
	}
	c, err := parseComponent(it, response)
	if err != nil {
		return component{}, errcode.Wrap(errcode.InvalidRequest, err, "component identifier %q", errcode.Cut(s))
	}
	return c, nil
}

func parseComponentIDs(ids []string, response bool) ([]component, error) {
	cs := make([]component, 0, len(ids))
	for _, s := range ids {
		c, err := parseComponentID(s, response)
		if err != nil {
			return nil, err
		}
		for _, d := range cs {
			if d == c {
				return nil, errcode.New(errcode.InvalidRequest, "component %s listed twice", c.id())
			}
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// validName accepts "@" followed by lowercase letters and "-", or an RFC 9110 token in
// lowercase (RFC 9421 section 2.1: a field's component name is its lowercased name).
// Neither can contain '"' or '\\', so id() needs no escaping.
func validName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	if s[0] == '@' {
		if len(s) == 1 {
			return false
		}
		for i := 1; i < len(s); i++ {
			if c := s[i]; (c < 'a' || c > 'z') && c != '-' {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// message is what the base is computed from: a request, or a response with the request
// it answers (for ;req components).
type message struct {
	response bool
	status   int
	header   http.Header

	method, scheme, authority, path, query string // request only; query without '?'

	req *message // the request a response answers; nil for a request
}

// requestMessage takes the components of r as a client sends them or a server receives
// them. The URL's escaped path and raw query are used as they are: RFC 9421 forbids
// normalizing them, and net/http keeps the received form in RawPath and RawQuery.
func requestMessage(r *http.Request) (*message, error) {
	m := new(message)
	if err := m.setRequest(r); err != nil {
		return nil, err
	}
	return m, nil
}

// setRequest fills m as requestMessage describes; the verifier keeps m on its stack.
func (m *message) setRequest(r *http.Request) error {
	if r == nil || r.URL == nil {
		return errcode.New(errcode.InvalidRequest, "request has no URL")
	}
	*m = message{header: r.Header, method: r.Method, query: r.URL.RawQuery}
	if m.method == "" {
		m.method = http.MethodGet // net/http's meaning of an empty client method
	}
	m.scheme = strings.ToLower(r.URL.Scheme)
	if m.scheme == "" {
		m.scheme = "http"
		if r.TLS != nil {
			m.scheme = "https"
		}
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	m.authority = normalizeAuthority(host, m.scheme)
	m.path = r.URL.EscapedPath()
	if m.path == "" {
		// RFC 9421 section 2.2.6: an empty path is "/". A client URL "http://h" and the
		// server's view of it ("/") then sign the same value.
		m.path = "/"
	}
	return nil
}

func responseMessage(status int, h http.Header, req *http.Request) (*message, error) {
	m := &message{response: true, status: status, header: h}
	if req != nil {
		rm, err := requestMessage(req)
		if err != nil {
			return nil, err
		}
		m.req = rm
	}
	return m, nil
}

// normalizeAuthority applies RFC 9421 section 2.2.3 (HTTP section 4.2.3): lowercase, and
// no port when it is the scheme's default.
func normalizeAuthority(host, scheme string) string {
	host = strings.ToLower(host)
	if strings.LastIndexByte(host, ':') < 0 {
		return host
	}
	if h, port, err := net.SplitHostPort(host); err == nil {
		if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
			if strings.IndexByte(h, ':') >= 0 {
				return "[" + h + "]"
			}
			return h
		}
	}
	return host
}

// value computes one component's value (RFC 9421 section 2).
func (m *message) value(c component) (string, error) {
	src := m
	if c.req {
		if m.req == nil {
			return "", errcode.New(errcode.MissingComponent, "%s: no request to take it from", c.id())
		}
		src = m.req
	}
	var v string
	switch c.name {
	case compMethod:
		v = src.method
	case compPath:
		v = src.path
	case compQuery:
		// RFC 9421 section 2.2.7: "?" followed by the query, or "?" alone without one.
		v = "?" + src.query
	case compAuthority:
		if src.authority == "" {
			return "", errcode.New(errcode.MissingComponent, "%s: the request has no authority", c.id())
		}
		v = src.authority
	case compTargetURI:
		if src.authority == "" {
			return "", errcode.New(errcode.MissingComponent, "%s: the request has no authority", c.id())
		}
		v = src.scheme + "://" + src.authority + src.path
		if src.query != "" {
			v += "?" + src.query
		}
	case compStatus:
		if src.status < 100 || src.status > 999 {
			return "", errcode.New(errcode.InvalidComponentValue, "status %d is not three digits", src.status)
		}
		v = strconv.Itoa(src.status)
	default:
		vals := src.header[c.key]
		if len(vals) == 0 {
			return "", errcode.New(errcode.MissingComponent, "covered field %q is absent", c.name)
		}
		v = fieldValue(vals)
	}
	if hasControl(v) {
		// A bare CR or LF would let one component's value forge another line of the base.
		return "", errcode.New(errcode.InvalidComponentValue, "%s contains a control character", c.id())
	}
	return v, nil
}

// hasControl reports whether v contains CR, LF or NUL. Three IndexByte scans (vectorized)
// rather than strings.IndexAny, which looks at one byte at a time: the values include
// the WIT and run to a kilobyte on every request.
func hasControl(v string) bool {
	return strings.IndexByte(v, '\n') >= 0 || strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, 0) >= 0
}

// fieldValue is RFC 9421 section 2.1: each field line's value with leading and trailing
// OWS removed, all lines joined by ", ".
func fieldValue(vals []string) string {
	if len(vals) == 1 {
		return strings.Trim(vals[0], " \t")
	}
	var b strings.Builder
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.Trim(v, " \t"))
	}
	return b.String()
}

// present reports whether the message carries field key (a canonical header key).
func (m *message) present(key string) bool { return len(m.header[key]) > 0 }

// signatureBase builds the base (RFC 9421 section 2.5): one `"<id>": <value>` line per
// covered component in the order given, then `"@signature-params": <params>`, LF
// between lines and none at the end. sigParams is the serialized inner list exactly as
// it appears in Signature-Input.
func signatureBase(m *message, comps []component, sigParams string) ([]byte, error) {
	// Values first, then one allocation of the exact size: this runs on every request.
	var small [16]string
	vals := small[:0]
	n := len(`"@signature-params": `) + len(sigParams)
	for _, c := range comps {
		v, err := m.value(c)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
		n += len(c.name) + len(`"";req: `) + len(v) + 1
	}
	b := make([]byte, 0, n)
	for i, c := range comps {
		b = append(b, '"')
		b = append(b, c.name...)
		b = append(b, '"')
		if c.req {
			b = append(b, ";req"...)
		}
		b = append(b, ": "...)
		b = append(b, vals[i]...)
		b = append(b, '\n')
	}
	b = append(b, `"@signature-params": `...)
	b = append(b, sigParams...)
	return b, nil
}
