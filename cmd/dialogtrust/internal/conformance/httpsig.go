package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
)

func init() { register("httpsig", runHTTPSig) }

// hsGapCase is the accepted case SOURCE.md ("Gap") says the newest EdDSA file almost
// surely has but no copy of was available; the runner builds it by hand when absent.
const hsGapCase = "intermediary-signature-outside-this-profile"

type hsRequest struct {
	Method    string     `json:"method"`
	Authority string     `json:"authority"`
	Path      string     `json:"path"`
	Query     *string    `json:"query"`
	Headers   [][]string `json:"headers"`
}

type hsParams struct {
	Created           int64  `json:"created"`
	Expires           int64  `json:"expires"`
	Nonce             string `json:"nonce"`
	Tag               string `json:"tag"`
	WimseAud          string `json:"wimse_aud"`
	WimseSignResponse bool   `json:"wimse_sign_response"`
	WimseReqNonce     string `json:"wimse_req_nonce"`
}

func (p hsParams) params() httpsig.Params {
	return httpsig.Params{
		Created: p.Created, Expires: p.Expires, Nonce: p.Nonce, Tag: p.Tag,
		Audience: p.WimseAud, SignResponse: p.WimseSignResponse, ReqNonce: p.WimseReqNonce,
	}
}

type hsVector struct {
	ID                 string          `json:"id"`
	Description        string          `json:"description"`
	PopSigningKey      json.RawMessage `json:"pop_signing_key"`
	IssuerVerifyingKey json.RawMessage `json:"issuer_verifying_key"`
	VerifyNow          int64           `json:"verify_now"`
	Label              string          `json:"label"`
	Components         []string        `json:"components"`
	Params             hsParams        `json:"params"`
	Request            hsRequest       `json:"request"`
	Body               string          `json:"body"`
	WIT                string          `json:"wit"`
	SignatureInput     string          `json:"signature_input"`
	Signature          string          `json:"signature"`

	// Verifier configuration a negative case may set (SOURCE.md "httpsig").
	AcceptAudience     *string  `json:"accept_audience"`
	MaxAge             *int64   `json:"max_age"`
	RequiredComponents []string `json:"required_components"`

	Negative []json.RawMessage `json:"negative"`
	Accepted []json.RawMessage `json:"accepted"`
	Response json.RawMessage   `json:"response"`
}

type hsResponse struct {
	WIT              string          `json:"wit"`
	PopSigningKey    json.RawMessage `json:"pop_signing_key"`
	Status           int             `json:"status"`
	Headers          [][]string      `json:"headers"`
	Body             string          `json:"body"`
	Components       []string        `json:"components"`
	Params           hsParams        `json:"params"`
	SignatureInput   string          `json:"signature_input"`
	Signature        string          `json:"signature"`
	ExpectedReqNonce string          `json:"expected_req_nonce"`
	// A response negative may override the request its ;req components come from,
	// and the time.
	Request   *hsRequest        `json:"request"`
	VerifyNow *int64            `json:"verify_now"`
	Negative  []json.RawMessage `json:"negative"`
}

type hsCase struct {
	ID, Expect, Description string
}

// runHTTPSig follows SOURCE.md "httpsig": re-sign the request (byte for byte), check its
// Content-Digest, verify the chain, every negative with its code and every accepted
// case; then the same for the response.
func runHTTPSig(file string, raw []byte) []Result {
	const suite = "httpsig"
	var v hsVector
	if err := json.Unmarshal(raw, &v); err != nil {
		return []Result{{Suite: suite, File: file, Case: "(file)", Detail: err.Error()}}
	}
	out := []Result{pass(suite, file, "descriptions", hsCheckDescriptions(v, raw))}
	out = append(out, pass(suite, file, "resign", hsResign(v)))
	out = append(out, pass(suite, file, "content-digest", hsCheckDigest(v.Request.Headers, v.Body)))
	out = append(out, pass(suite, file, "verify", hsVerifyPositive(v)))

	for _, n := range v.Negative {
		var c hsCase
		_ = json.Unmarshal(n, &c)
		merged, err := merge(raw, n)
		if err != nil {
			out = append(out, pass(suite, file, c.ID, err))
			continue
		}
		var cv hsVector
		if err := json.Unmarshal(merged, &cv); err != nil {
			out = append(out, pass(suite, file, c.ID, err))
			continue
		}
		_, err = hsVerifyRequest(cv)
		out = append(out, expectCode(suite, file, c.ID, err, c.Expect))
	}

	accepted, gapNote := hsAcceptedCases(v)
	for _, a := range accepted {
		var c hsCase
		_ = json.Unmarshal(a, &c)
		name := "accepted/" + c.ID
		if c.ID == hsGapCase && gapNote {
			name += " (built by the runner: SOURCE.md Gap)"
		}
		merged, err := merge(raw, a)
		if err != nil {
			out = append(out, pass(suite, file, name, err))
			continue
		}
		var cv hsVector
		if err := json.Unmarshal(merged, &cv); err != nil {
			out = append(out, pass(suite, file, name, err))
			continue
		}
		_, err = hsVerifyRequest(cv)
		out = append(out, pass(suite, file, name, err))
	}

	if len(v.Response) == 0 {
		return append(out, Result{Suite: suite, File: file, Case: "response", Detail: "vector has no response"})
	}
	var r hsResponse
	if err := json.Unmarshal(v.Response, &r); err != nil {
		return append(out, pass(suite, file, "response", err))
	}
	out = append(out, pass(suite, file, "response/resign", hsResignResponse(v, r)))
	out = append(out, pass(suite, file, "response/content-digest", hsCheckDigest(r.Headers, r.Body)))
	out = append(out, pass(suite, file, "response/verify", hsVerifyResponsePositive(v, r)))
	for _, n := range r.Negative {
		var c hsCase
		_ = json.Unmarshal(n, &c)
		name := "response/" + c.ID
		merged, err := merge(v.Response, n)
		if err != nil {
			out = append(out, pass(suite, file, name, err))
			continue
		}
		var cr hsResponse
		if err := json.Unmarshal(merged, &cr); err != nil {
			out = append(out, pass(suite, file, name, err))
			continue
		}
		_, err = hsVerifyResponse(v, cr)
		out = append(out, expectCode(suite, file, name, err, c.Expect))
	}
	return out
}

// hsAcceptedCases returns the accepted cases, adding the Gap case to the EdDSA file when
// it is absent, built as SOURCE.md says: an intermediary member before the positive one,
// whose signature is 64 zero octets and which must never be parsed in full or verified.
func hsAcceptedCases(v hsVector) ([]json.RawMessage, bool) {
	cases := v.Accepted
	if v.ID != "sign-eddsa" {
		return cases, false
	}
	for _, a := range cases {
		var c hsCase
		_ = json.Unmarshal(a, &c)
		if c.ID == hsGapCase {
			return cases, false
		}
	}
	gap, _ := json.Marshal(map[string]string{
		"id":              hsGapCase,
		"signature_input": `proxy=("@target-uri" "content-type";sf);created=1700000000;tag="example-proxy-hop", ` + v.SignatureInput,
		"signature":       "proxy=:" + base64.StdEncoding.EncodeToString(make([]byte, 64)) + ":, " + v.Signature,
	})
	return append(append([]json.RawMessage(nil), cases...), gap), true
}

// hsCheckDescriptions: no description may name the other algorithm (SOURCE.md, General).
func hsCheckDescriptions(v hsVector, raw []byte) error {
	key, err := keys.ParsePrivateJWK(v.PopSigningKey)
	if err != nil {
		return err
	}
	other := []string{"ed25519", "eddsa"}
	if keys.FamilyOf(key.Alg()) == keys.FamilyEd25519 {
		other = []string{"p-256", "es256"}
	}
	var d struct {
		Description string
		Negative    []hsCase
		Accepted    []hsCase
		Response    struct{ Negative []hsCase }
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return err
	}
	texts := []string{d.Description}
	for _, cs := range [][]hsCase{d.Negative, d.Accepted, d.Response.Negative} {
		for _, c := range cs {
			texts = append(texts, c.Description)
		}
	}
	for _, t := range texts {
		for _, o := range other {
			if strings.Contains(strings.ToLower(t), o) {
				return fmt.Errorf("description %q names the other algorithm", t)
			}
		}
	}
	return nil
}

func hsResign(v hsVector) error {
	key, err := keys.ParsePrivateJWK(v.PopSigningKey)
	if err != nil {
		return err
	}
	req, err := hsBuildRequest(v.Request, v.Body, "", "")
	if err != nil {
		return err
	}
	si, sig, err := httpsig.SignRequestWithParams(key, v.Label, v.Components, v.Params.params(), req)
	if err != nil {
		return err
	}
	return hsSame(si, sig, v.SignatureInput, v.Signature)
}

func hsResignResponse(v hsVector, r hsResponse) error {
	key, err := keys.ParsePrivateJWK(r.PopSigningKey)
	if err != nil {
		return err
	}
	req, err := hsBuildRequest(v.Request, v.Body, v.SignatureInput, v.Signature)
	if err != nil {
		return err
	}
	si, sig, err := httpsig.SignResponseWithParams(key, v.Label, r.Components, r.Params.params(), r.Status, hsHeader(r.Headers), req)
	if err != nil {
		return err
	}
	return hsSame(si, sig, r.SignatureInput, r.Signature)
}

func hsSame(si, sig, wantSI, wantSig string) error {
	if si != wantSI {
		return fmt.Errorf("re-signed Signature-Input differs:\n got %s\nwant %s", si, wantSI)
	}
	if sig != wantSig {
		return fmt.Errorf("re-signed Signature differs:\n got %s\nwant %s", sig, wantSig)
	}
	return nil
}

// hsCheckDigest: the recorded Content-Digest is sha-256 of the recorded body.
func hsCheckDigest(headers [][]string, body string) error {
	sum := sha256.Sum256([]byte(body))
	want := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	if got := hsHeader(headers).Get("Content-Digest"); got != want {
		return fmt.Errorf("Content-Digest %q, want %q", got, want)
	}
	return nil
}

func hsVerifyPositive(v hsVector) error {
	res, err := hsVerifyRequest(v)
	if err != nil {
		return err
	}
	switch {
	case res.Label != v.Label:
		return fmt.Errorf("verified label %q, want %q", res.Label, v.Label)
	case res.WIT.Raw != v.WIT:
		return fmt.Errorf("verified with another WIT (%s)", tokenhash.Of(res.WIT.Raw))
	case res.Nonce != v.Params.Nonce || res.Audience != v.Params.WimseAud || res.SignResponse != v.Params.WimseSignResponse:
		return fmt.Errorf("verified parameters differ: nonce %q aud %q sign-response %v", res.Nonce, res.Audience, res.SignResponse)
	case res.Created.Unix() != v.Params.Created || res.Expires.Unix() != v.Params.Expires:
		return fmt.Errorf("verified window %d..%d differs", res.Created.Unix(), res.Expires.Unix())
	case strings.Join(res.Covered, " ") != strings.Join(v.Components, " "):
		return fmt.Errorf("covered %v, want %v", res.Covered, v.Components)
	}
	return nil
}

// hsVerifyRequest verifies a (merged) request case with the configuration it names.
// The key is the one of the case's wit (SOURCE.md: never the case's headers): when the
// request's own Workload-Identity-Token is that WIT, the ordinary path that reads it
// from the message is used, else the WIT is passed in.
func hsVerifyRequest(v hsVector) (*httpsig.Result, error) {
	clock, wv, err := hsValidator(v.IssuerVerifyingKey, v.VerifyNow)
	if err != nil {
		return nil, err
	}
	aud := v.Params.WimseAud
	if v.AcceptAudience != nil {
		aud = *v.AcceptAudience
	}
	required := v.Components
	if v.RequiredComponents != nil {
		required = v.RequiredComponents
	}
	opts := []httpsig.VerifierOption{
		httpsig.WithAudiences(aud), httpsig.WithRequiredComponents(required...),
		httpsig.WithClock(clock), httpsig.WithSkew(0),
	}
	if v.MaxAge != nil {
		opts = append(opts, httpsig.WithMaxAge(time.Duration(*v.MaxAge)*time.Second))
	}
	req, err := hsBuildRequest(v.Request, v.Body, v.SignatureInput, v.Signature)
	if err != nil {
		return nil, err
	}
	ver := httpsig.NewVerifier(wv, opts...)
	if hsHeader(v.Request.Headers).Get(wit.HeaderName) == v.WIT {
		return ver.VerifyRequest(context.Background(), req)
	}
	return ver.VerifyRequestWithWIT(context.Background(), req, v.WIT)
}

func hsVerifyResponsePositive(v hsVector, r hsResponse) error {
	res, err := hsVerifyResponse(v, r)
	if err != nil {
		return err
	}
	switch {
	case res == nil:
		return fmt.Errorf("signed response reported as unsigned")
	case res.Label != v.Label:
		return fmt.Errorf("verified label %q, want %q", res.Label, v.Label)
	case res.WIT.Raw != r.WIT:
		return fmt.Errorf("verified with another WIT (%s)", tokenhash.Of(res.WIT.Raw))
	case res.ReqNonce != r.ExpectedReqNonce || res.Nonce != r.Params.Nonce:
		return fmt.Errorf("verified nonces differ: %q %q", res.Nonce, res.ReqNonce)
	case strings.Join(res.Covered, " ") != strings.Join(r.Components, " "):
		return fmt.Errorf("covered %v, want %v", res.Covered, r.Components)
	}
	return nil
}

// hsVerifyResponse verifies a (merged) response case against the vector's request, or
// the request the case names, with the response profile.
func hsVerifyResponse(v hsVector, r hsResponse) (*httpsig.Result, error) {
	now := v.VerifyNow
	if r.VerifyNow != nil {
		now = *r.VerifyNow
	}
	clock, wv, err := hsValidator(v.IssuerVerifyingKey, now)
	if err != nil {
		return nil, err
	}
	reqSpec := v.Request
	if r.Request != nil {
		reqSpec = *r.Request
	}
	req, err := hsBuildRequest(reqSpec, v.Body, v.SignatureInput, v.Signature)
	if err != nil {
		return nil, err
	}
	h := hsHeader(r.Headers)
	h.Set("Signature-Input", r.SignatureInput)
	h.Set("Signature", r.Signature)
	res := &http.Response{
		StatusCode: r.Status, Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(r.Body)), ContentLength: int64(len(r.Body)),
	}
	ver := httpsig.NewVerifier(wv, httpsig.WithRequiredResponseComponents(r.Components...),
		httpsig.WithClock(clock), httpsig.WithSkew(0))
	ctx := context.Background()
	if h.Get(wit.HeaderName) == r.WIT {
		return ver.VerifyResponse(ctx, res, req, r.ExpectedReqNonce, v.Params.WimseSignResponse)
	}
	return ver.VerifyResponseWithWIT(ctx, res, req, r.ExpectedReqNonce, v.Params.WimseSignResponse, r.WIT)
}

// hsValidator is the WIT validator of a vector: its issuer key for every trust domain,
// verify_now, zero skew.
func hsValidator(issuerKey json.RawMessage, now int64) (func() time.Time, *wit.Validator, error) {
	pub, err := keys.ParsePublicJWK(issuerKey)
	if err != nil {
		return nil, nil, err
	}
	clock := func() time.Time { return time.Unix(now, 0) }
	return clock, wit.NewValidator(oneDomainTrust{pub}, wit.WithSkew(0), wit.WithClock(clock)), nil
}

// hsBuildRequest builds the request as a server receives it: origin-form target, Host
// from authority, headers in recorded order, then the signature fields if given.
func hsBuildRequest(r hsRequest, body, sigInput, sig string) (*http.Request, error) {
	target := r.Path
	if r.Query != nil {
		target += "?" + *r.Query
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, fmt.Errorf("request target %q: %w", target, err)
	}
	req := &http.Request{
		Method: r.Method, URL: u, RequestURI: target, Host: r.Authority,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hsHeader(r.Headers), Body: http.NoBody,
	}
	if body != "" {
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	if sigInput != "" {
		req.Header.Set("Signature-Input", sigInput)
	}
	if sig != "" {
		req.Header.Set("Signature", sig)
	}
	return req, nil
}

func hsHeader(pairs [][]string) http.Header {
	h := http.Header{}
	for _, p := range pairs {
		if len(p) == 2 {
			h.Add(p[0], p[1])
		}
	}
	return h
}
