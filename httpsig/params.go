package httpsig

import (
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dunglas/httpsfv"
)

// Signature parameter names (RFC 9421 section 2.3 and http-signature-07 section 3).
const (
	paramCreated      = "created"
	paramExpires      = "expires"
	paramNonce        = "nonce"
	paramTag          = "tag"
	paramKeyID        = "keyid"
	paramAlg          = "alg"
	paramAudience     = "wimse-aud"
	paramSignResponse = "wimse-sign-response"
	paramReqNonce     = "wimse-req-nonce"
)

// Field names.
const (
	headerSignatureInput = "Signature-Input"
	headerSignature      = "Signature"
	headerContentDigest  = "Content-Digest"
	headerWIT            = "Workload-Identity-Token"
	headerDialogContext  = "Dialog-Context"
)

// maxNonceLen bounds a received nonce: it becomes a replay-store key.
const maxNonceLen = 256

// Params are the signature parameters this profile writes, in the order it writes them:
// created, expires, nonce, tag, wimse-aud, then wimse-sign-response (requests) or
// wimse-req-nonce (responses). keyid and alg are never written (http-signature-07
// section 3: the key is the WIT's cnf key and the algorithm its alg).
//
// An empty string or false leaves a parameter out; created and expires are always written.
type Params struct {
	Created, Expires int64 // Unix seconds
	Nonce            string
	Tag              string
	Audience         string // wimse-aud, requests only
	SignResponse     bool   // wimse-sign-response, requests only; serialized as a bare key
	ReqNonce         string // wimse-req-nonce, responses only
}

// innerList serializes comps and p as the Signature-Input member value. It is the
// "@signature-params" value of the base, byte for byte.
func (p Params) innerList(comps []component) (httpsfv.InnerList, string, error) {
	il := p.list(comps)
	s, err := httpsfv.Marshal(il)
	if err != nil {
		// Only a parameter string outside printable ASCII gets here.
		return il, "", errcode.Wrap(errcode.InvalidRequest, err, "signature parameters cannot be serialized")
	}
	return il, s, nil
}

// list is comps and p as an httpsfv inner list. Its items share the read-only
// itemParams: the list is only ever serialized.
func (p Params) list(comps []component) httpsfv.InnerList {
	items := make([]httpsfv.Item, len(comps))
	for i, c := range comps {
		items[i] = c.item()
	}
	ps := httpsfv.NewParams()
	ps.Add(paramCreated, p.Created)
	ps.Add(paramExpires, p.Expires)
	if p.Nonce != "" {
		ps.Add(paramNonce, p.Nonce)
	}
	if p.Tag != "" {
		ps.Add(paramTag, p.Tag)
	}
	if p.Audience != "" {
		ps.Add(paramAudience, p.Audience)
	}
	if p.SignResponse {
		ps.Add(paramSignResponse, true)
	}
	if p.ReqNonce != "" {
		ps.Add(paramReqNonce, p.ReqNonce)
	}
	return httpsfv.InnerList{Items: items, Params: ps}
}

// itemParams are the parameters of a covered-component item this package writes: none,
// or ;req. They are shared by every signature made, so they must never be modified;
// httpsfv.Marshal only reads them.
var itemParams = struct{ none, req *httpsfv.Params }{
	none: httpsfv.NewParams(),
	req: func() *httpsfv.Params {
		p := httpsfv.NewParams()
		p.Add("req", true)
		return p
	}(),
}

// received is the selected WIMSE signature of a message, parsed only as far as
// selection needs: its label, its Signature-Input member and its signature octets.
type received struct {
	label string
	input httpsfv.InnerList
	sig   []byte
}

// errUnsigned: the message has no Signature-Input member at all.
var errUnsigned = errcode.New(errcode.MissingCredential, "the message carries no HTTP signature (no Signature-Input)")

// selectSignature implements SIG-1: parse the Signature-Input and Signature dictionaries,
// choose the WIMSE signature by its tag, never by its label, and take its signature
// octets. Members that are not selected are not looked at beyond their tag.
//
// RFC 8941 section 4.2.2 makes a repeated dictionary key overwrite the earlier value;
// httpsfv does exactly that, so every conforming parser sees the same members.
func selectSignature(h http.Header, maxSize int) (received, error) {
	// Direct map reads: both names are canonical keys, which is all Values would look up.
	siVals := h[headerSignatureInput]
	sVals := h[headerSignature]
	if err := checkSize(headerSignatureInput, siVals, maxSize); err != nil {
		return received{}, err
	}
	if err := checkSize(headerSignature, sVals, maxSize); err != nil {
		return received{}, err
	}
	if len(siVals) == 0 {
		if len(sVals) > 0 {
			return received{}, errcode.New(errcode.ParseError, "Signature without Signature-Input")
		}
		return received{}, errUnsigned
	}
	dict, err := httpsfv.UnmarshalDictionary(siVals)
	if err != nil {
		return received{}, errcode.Wrap(errcode.ParseError, err, "Signature-Input is not an RFC 8941 dictionary")
	}
	names := dict.Names()
	if len(names) == 0 {
		// An empty dictionary is the absent field (RFC 8941 section 3.2).
		if len(strings.TrimSpace(strings.Join(sVals, ""))) > 0 {
			return received{}, errcode.New(errcode.ParseError, "Signature without Signature-Input")
		}
		return received{}, errUnsigned
	}
	var label string
	if len(names) == 1 {
		// A lone member is judged as the WIMSE signature, so that its tag errors are
		// reported as such (wrong_tag, missing_parameter) rather than as "none found".
		label = names[0]
	} else {
		n := 0
		for _, name := range names {
			m, _ := dict.Get(name)
			if hasWIMSETag(m) {
				label = name
				n++
			}
		}
		switch {
		case n == 0:
			return received{}, errcode.New(errcode.NoWIMSESignature, "%d signatures, none tagged %q", len(names), Tag)
		case n > 1:
			// http-signature-07 section 3: the recipient MUST reject rather than pick.
			return received{}, errcode.New(errcode.AmbiguousWIMSESignature, "%d signatures are tagged %q", n, Tag)
		}
	}
	m, _ := dict.Get(label)
	il, ok := m.(httpsfv.InnerList)
	if !ok {
		return received{}, errcode.New(errcode.ParseError, "Signature-Input member %q is not an inner list", errcode.Cut(label))
	}
	if il.Params == nil {
		il.Params = httpsfv.NewParams()
	}

	sdict, err := httpsfv.UnmarshalDictionary(sVals)
	if err != nil {
		return received{}, errcode.Wrap(errcode.ParseError, err, "Signature is not an RFC 8941 dictionary")
	}
	sm, ok := sdict.Get(label)
	if !ok {
		return received{}, errcode.New(errcode.MalformedSignature, "no Signature member for label %q", errcode.Cut(label))
	}
	it, ok := sm.(httpsfv.Item)
	if !ok {
		return received{}, errcode.New(errcode.MalformedSignature, "Signature member %q is not a byte sequence", errcode.Cut(label))
	}
	sig, ok := it.Value.([]byte)
	if !ok {
		return received{}, errcode.New(errcode.MalformedSignature, "Signature member %q is not a byte sequence", errcode.Cut(label))
	}
	// ES256 (raw r||s) and Ed25519 signatures are both 64 octets.
	if len(sig) != 64 {
		return received{}, errcode.New(errcode.MalformedSignature, "signature is %d octets, want 64", len(sig))
	}
	return received{label: label, input: il, sig: sig}, nil
}

func hasWIMSETag(m httpsfv.Member) bool {
	var p *httpsfv.Params
	switch v := m.(type) {
	case httpsfv.InnerList:
		p = v.Params
	case httpsfv.Item:
		p = v.Params
	}
	if p == nil {
		return false
	}
	t, ok := p.Get(paramTag)
	return ok && t == Tag
}

func checkSize(name string, vals []string, max int) error {
	n := 0
	for _, v := range vals {
		n += len(v) + 2
	}
	if n > max {
		return errcode.New(errcode.ParseError, "%s is longer than %d octets", name, max)
	}
	return nil
}

// sigParams are the received parameters the profile reads.
type sigParams struct {
	created, expires int64
	nonce, tag       string
	audience         string
	hasAudience      bool
	signResponse     bool
	reqNonce         string
	hasReqNonce      bool
}

// checkParams applies the profile's parameter rules (SIG-3, http-signature-07 section 3):
// created, expires, nonce and tag are present with their RFC 9421 types; tag is the
// WIMSE tag; keyid and alg are absent. Then, for a request, wimse-aud is present; for a
// response, wimse-aud is absent and wimse-req-nonce present. Presence is checked before
// values, and all of it before anything about the algorithm: a forbidden alg is reported
// as forbidden_parameter, whatever algorithm it names.
func checkParams(p *httpsfv.Params, response bool) (sigParams, error) {
	var sp sigParams
	var err error
	if sp.created, err = intParam(p, paramCreated); err != nil {
		return sp, err
	}
	if sp.expires, err = intParam(p, paramExpires); err != nil {
		return sp, err
	}
	if sp.nonce, _, err = stringParam(p, paramNonce); err != nil {
		return sp, err
	}
	if sp.nonce == "" {
		return sp, errcode.New(errcode.MissingParameter, "nonce is empty")
	}
	if len(sp.nonce) > maxNonceLen {
		return sp, errcode.New(errcode.ParseError, "nonce is longer than %d octets", maxNonceLen)
	}
	if sp.tag, _, err = stringParam(p, paramTag); err != nil {
		return sp, err
	}
	if sp.tag != Tag {
		return sp, errcode.New(errcode.WrongTag, "tag %q is not %q", errcode.Cut(sp.tag), Tag)
	}
	for _, f := range []string{paramKeyID, paramAlg} {
		if _, ok := p.Get(f); ok {
			return sp, errcode.New(errcode.ForbiddenParameter, "the %q parameter is forbidden: the key and its algorithm come from the WIT", f)
		}
	}
	if !response {
		if sp.audience, sp.hasAudience, err = stringParam(p, paramAudience); err != nil {
			return sp, err
		}
		if v, ok := p.Get(paramSignResponse); ok {
			b, isBool := v.(bool)
			if !isBool {
				return sp, errcode.New(errcode.ParseError, "%s is not an sf-boolean", paramSignResponse)
			}
			sp.signResponse = b
		}
		return sp, nil
	}
	if _, ok := p.Get(paramAudience); ok {
		return sp, errcode.New(errcode.ForbiddenParameter, "%s is forbidden in a response signature", paramAudience)
	}
	if sp.reqNonce, sp.hasReqNonce, err = stringParam(p, paramReqNonce); err != nil {
		return sp, err
	}
	return sp, nil
}

func intParam(p *httpsfv.Params, name string) (int64, error) {
	v, ok := p.Get(name)
	if !ok {
		return 0, errcode.New(errcode.MissingParameter, "the %q parameter is required", name)
	}
	n, ok := v.(int64)
	if !ok {
		return 0, errcode.New(errcode.ParseError, "%q is not an sf-integer", name)
	}
	return n, nil
}

func stringParam(p *httpsfv.Params, name string) (string, bool, error) {
	v, ok := p.Get(name)
	if !ok {
		return "", false, errcode.New(errcode.MissingParameter, "the %q parameter is required", name)
	}
	s, ok := v.(string)
	if !ok {
		return "", true, errcode.New(errcode.ParseError, "%q is not an sf-string", name)
	}
	return s, true, nil
}

// parseCovered checks the covered-component list of the selected signature.
func parseCovered(items []httpsfv.Item, response bool) ([]component, error) {
	return appendCovered(nil, items, response)
}

// appendCovered is parseCovered storing into buf (from index 0), so that the verifier
// can parse into an array on its stack; nil buf allocates.
func appendCovered(buf []component, items []httpsfv.Item, response bool) ([]component, error) {
	if len(items) > maxComponents {
		return nil, errcode.New(errcode.ParseError, "%d covered components, limit %d", len(items), maxComponents)
	}
	if buf == nil {
		buf = make([]component, 0, len(items))
	}
	comps := buf[:0]
	for _, it := range items {
		c, err := parseComponent(it, response)
		if err != nil {
			return nil, err
		}
		for _, d := range comps {
			if d.name == c.name && d.req == c.req {
				// RFC 9421 section 2.5: a component may be covered once.
				return nil, errcode.New(errcode.ParseError, "component %s is covered twice", c.id())
			}
		}
		comps = append(comps, c)
	}
	return comps, nil
}

// signatureFields serializes the Signature-Input and Signature members for label.
func signatureFields(label string, il httpsfv.InnerList, sig []byte) (string, string, error) {
	d := httpsfv.NewDictionary()
	d.Add(label, il)
	si, err := httpsfv.Marshal(d)
	if err != nil {
		return "", "", errcode.Wrap(errcode.InvalidRequest, err, "label %q is not an RFC 8941 key", errcode.Cut(label))
	}
	s, err := signatureField(label, sig)
	if err != nil {
		return "", "", err
	}
	return si, s, nil
}

// signatureField serializes the Signature member for label.
func signatureField(label string, sig []byte) (string, error) {
	sd := httpsfv.NewDictionary()
	sd.Add(label, httpsfv.Item{Value: sig, Params: itemParams.none})
	s, err := httpsfv.Marshal(sd)
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidRequest, err, "signature cannot be serialized")
	}
	return s, nil
}

// validLabel reports whether s is an RFC 8941 key (a dictionary member name).
func validLabel(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	if c := s[0]; (c < 'a' || c > 'z') && c != '*' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && strings.IndexByte("_-.*", c) < 0 {
			return false
		}
	}
	return true
}
