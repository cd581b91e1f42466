package httpsig

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

var ctx = context.Background()

var algs = []string{keys.ES256, keys.EdDSA}

func TestSignVerifyRequest(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			f := newFixture(t, alg)
			req, nonce := f.signedRequest()
			res, err := f.verifier().VerifyRequest(ctx, req)
			mustOK(t, err)
			if res.WIT.Subject.String() != "spiffe://example.org/client" || res.Nonce != nonce || res.Label != DefaultLabel ||
				res.Audience != testAudience || res.SignResponse || !res.Expires.Equal(res.Created.Add(DefaultTTL)) {
				t.Fatalf("unexpected result %+v", res)
			}
			// The handler still gets the body that was checked.
			b := make([]byte, 64)
			n, _ := req.Body.Read(b)
			if string(b[:n]) != `{"amount":100}` {
				t.Fatalf("body after verification: %q", b[:n])
			}
		})
	}
}

// Section 3: "@method" "@path" "@query" always, and content-type, content-digest,
// authorization, txn-token and workload-identity-token whenever present; never keyid or
// alg; parameters in the recorded order.
func TestHTTPSig07Sec3_RequestCoversRequiredComponents(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, http.MethodPost, testURL+"?x=1", "{}")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer abc")
	req.Header.Set("Txn-Token", "txn.token.value")
	req.Header.Set("Dialog-Context", "dlg=D1")
	nonce, err := f.client.signer.SignRequest(req, testAudience, RequestSignResponse(true))
	mustOK(t, err)
	si := req.Header.Get("Signature-Input")
	want := `wimse=("@method" "@path" "@query" "content-type" "content-digest" "authorization" "txn-token" "workload-identity-token" "dialog-context");created=1800000000;expires=1800000060;nonce="` +
		nonce + `";tag="wimse-workload-to-workload";wimse-aud="https://server.example/api";wimse-sign-response`
	if si != want {
		t.Fatalf("Signature-Input\n got %s\nwant %s", si, want)
	}
	if got := req.Header.Values("Workload-Identity-Token"); len(got) != 1 || got[0] != f.client.wit {
		t.Fatal("Workload-Identity-Token not set exactly once")
	}
	res, err := f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	mustOK(t, err)
	if !res.SignResponse || !res.Covers(`"dialog-context"`) || !res.Covers(`"txn-token"`) {
		t.Fatalf("result %+v", res)
	}
}

func TestHTTPSig07Sec3_RequiredComponentsMustBeCovered(t *testing.T) {
	f := newFixture(t, keys.EdDSA)
	all := []string{`"@method"`, `"@path"`, `"@query"`, `"content-type"`, `"content-digest"`, `"authorization"`, `"txn-token"`, `"workload-identity-token"`, `"dialog-provenance"`}
	for i := range all {
		t.Run(all[i], func(t *testing.T) {
			req := newRequest(t, http.MethodPost, testURL, "{}")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer abc")
			req.Header.Set("Txn-Token", "txn")
			req.Header.Set("Dialog-Provenance", ":AAAA:")
			_, err := f.client.signer.SignRequest(req, testAudience)
			mustOK(t, err)
			comps := append(append([]string(nil), all[:i]...), all[i+1:]...)
			resignRequest(t, f.client.key, req, "wimse", comps, f.params())
			_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
			wantCode(t, err, errcode.MissingRequiredComponent)
		})
	}
	// Configured components add to the profile's own set.
	req, _ := f.signedRequest()
	_, err := f.verifier(WithRequiredComponents(`"txn-token"`)).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.MissingRequiredComponent)
	req, _ = f.signedRequest()
	_, err = f.verifier(WithRequiredComponents(`"content-type"`, `"@authority"`)).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.MissingRequiredComponent)
	req, _ = f.signedRequest()
	_, err = f.verifier(WithRequiredComponents(`@method`)).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.InvalidRequest)
}

// Section 3 / RFC 9421 section 2.2.7: "@query" is "?" when the URL has none.
func TestHTTPSig07Sec3_QueryIsQuestionMarkWithoutQuery(t *testing.T) {
	f := newFixture(t, keys.ES256)
	for url, want := range map[string]string{testURL: "?", testURL + "?a=1&b=%20": "?a=1&b=%20", "https://server.example": "?"} {
		req := newRequest(t, http.MethodGet, url, "")
		m, err := requestMessage(req)
		mustOK(t, err)
		v, err := m.value(component{name: compQuery})
		mustOK(t, err)
		if v != want {
			t.Errorf("%s: @query %q, want %q", url, v, want)
		}
		if _, err := f.client.signer.SignRequest(req, testAudience); err != nil {
			t.Fatal(err)
		}
		_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
		mustOK(t, err)
	}
}

// Section 3: the receiver MUST recompute Content-Digest over the received content.
func TestHTTPSig07Sec3_BodySwappedUnderUnchangedDigestRejected(t *testing.T) {
	for _, alg := range algs {
		f := newFixture(t, alg)
		req, _ := f.signedRequest()
		req.Body = readCloser(`{"amount":999}`)
		_, err := f.verifier().VerifyRequest(ctx, req)
		wantCode(t, err, errcode.ContentDigestMismatch)
	}
}

// Section 3: content MUST come with Content-Digest.
func TestHTTPSig07Sec3_ContentWithoutDigestRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, http.MethodGet, testURL, "")
	_, err := f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	srv := onTheWire(t, req)
	srv.Body = readCloser("smuggled")
	_, err = f.verifier().VerifyRequest(ctx, srv)
	wantCode(t, err, errcode.MissingComponent)
}

// wimse.md section 6: the digest is over the exact octets, trailing newline included.
func TestHTTPSig07Sec3_ContentDigestOverExactOctets(t *testing.T) {
	d, err := contentDigest([]byte("{\"a\":1}\n"))
	mustOK(t, err)
	d2, _ := contentDigest([]byte("{\"a\":1}"))
	if d == d2 || !strings.HasPrefix(d, "sha-256=:") {
		t.Fatalf("digest %s / %s", d, d2)
	}
	f := newFixture(t, keys.ES256)
	req := newRequest(t, http.MethodPost, testURL, "{\"a\":1}\n")
	_, err = f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	if req.Header.Get("Content-Digest") != d {
		t.Fatal("signer's Content-Digest is not over the exact body")
	}
	srv := onTheWire(t, req)
	srv.Body = readCloser("{\"a\":1}")
	_, err = f.verifier().VerifyRequest(ctx, srv)
	wantCode(t, err, errcode.ContentDigestMismatch)
}

// Section 3: the WIMSE signature is the one with the WIMSE tag; a recipient MUST NOT
// select by label.
func TestHTTPSig07Sec3_SelectByTagNeverByLabel(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, http.MethodGet, testURL, "")
	f.client.signer.label = "origin"
	_, err := f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	other, _ := keys.Generate(keys.ES256)
	p := f.params()
	p.Tag = "example-proxy-hop"
	si, sig, err := SignRequestWithParams(other, "wimse", []string{`"@method"`, `"@path"`}, p, req)
	mustOK(t, err)
	req.Header.Set("Signature-Input", si+", "+req.Header.Get("Signature-Input"))
	req.Header.Set("Signature", sig+", "+req.Header.Get("Signature"))
	res, err := f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	mustOK(t, err)
	if res.Label != "origin" {
		t.Fatalf("selected %q", res.Label)
	}
	// Without the WIMSE one, the proxy signature labelled "wimse" is not taken.
	req.Header.Set("Signature-Input", si+`, x=("@method");tag="other"`)
	req.Header.Set("Signature", sig+", x=:"+b64.EncodeToString(make([]byte, 64))+":")
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.NoWIMSESignature)
}

// Section 3: more than one WIMSE-tagged signature MUST be rejected.
func TestHTTPSig07Sec3_TwoWIMSESignaturesRejected(t *testing.T) {
	f := newFixture(t, keys.EdDSA)
	req := newRequest(t, http.MethodGet, testURL, "")
	_, err := f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	si, sig, err := SignRequestWithParams(f.client.key, "second", []string{`"@method"`, `"@path"`, `"@query"`, `"workload-identity-token"`}, f.params(), req)
	mustOK(t, err)
	req.Header.Add("Signature-Input", si)
	req.Header.Add("Signature", sig)
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.AmbiguousWIMSESignature)
}

// Section 3: keyid and alg MUST NOT be used; the key and algorithm come from the WIT.
func TestHTTPSig07Sec3_KeyIDAndAlgForbidden(t *testing.T) {
	f := newFixture(t, keys.ES256)
	for _, extra := range []string{`;keyid="k1"`, `;alg="ecdsa-p256-sha256"`, `;alg="ed25519"`} {
		req, _ := f.signedRequest()
		req.Header.Set("Signature-Input", req.Header.Get("Signature-Input")+extra)
		_, err := f.verifier().VerifyRequest(ctx, req)
		wantCode(t, err, errcode.ForbiddenParameter)
	}
}

func TestHTTPSig07Sec3_MissingParametersRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	for _, drop := range []string{"created", "expires", "nonce", "tag", "wimse-aud"} {
		req, _ := f.signedRequest()
		d, err := parseMember(req.Header.Values("Signature-Input"))
		mustOK(t, err)
		d.Params.Del(drop)
		setInput(t, req, "wimse", d)
		_, err = f.verifier().VerifyRequest(ctx, req)
		wantCode(t, err, errcode.MissingParameter)
	}
	req, _ := f.signedRequest()
	req.Header.Set("Signature-Input", strings.Replace(req.Header.Get("Signature-Input"), Tag, "wimse-s2s", 1))
	_, err := f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.WrongTag)
}

// Section 3 (SIG-2): the WIT is validated before the signature, and the signature must
// be made with the WIT's key.
func TestHTTPSig07Sec3_WITValidatedAndKeyBound(t *testing.T) {
	f := newFixture(t, keys.ES256)
	// A WIT of an untrusted trust domain is refused as such, not as a bad signature.
	stranger := f.party(keys.ES256, "spiffe://other.org/client")
	req := newRequest(t, http.MethodGet, testURL, "")
	_, err := stranger.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.UntrustedIssuer)
	// Someone else's key under the client's WIT.
	thief := NewSigner(f.server.key, f.client.wit, WithClock(f.clock))
	req = newRequest(t, http.MethodGet, testURL, "")
	_, err = thief.SignRequest(req, testAudience)
	mustOK(t, err)
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.InvalidSignature)
	if strings.Contains(err.Error(), f.client.wit) || strings.Contains(err.Error(), strings.Split(f.client.wit, ".")[2]) {
		t.Fatal("error detail carries the WIT")
	}
	// An expired WIT is refused before the signature is looked at, even when the
	// signature itself is fresh.
	shortLived := f.partyTTL(keys.ES256, "spiffe://example.org/client", 30*time.Second)
	f.advance(40 * time.Second)
	req = newRequest(t, http.MethodGet, testURL, "")
	_, err = shortLived.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.Expired)
}

func TestHTTPSig07Sec3_ExactlyOneWIT(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req, _ := f.signedRequest()
	req.Header.Add("Workload-Identity-Token", f.server.wit)
	_, err := f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.DuplicateField)

	req = newRequest(t, http.MethodGet, testURL, "")
	_, err = f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	resignRequest(t, f.client.key, req, "wimse", []string{`"@method"`, `"@path"`, `"@query"`}, f.params())
	req.Header.Del("Workload-Identity-Token")
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.MissingCredential)

	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, newRequest(t, http.MethodGet, testURL, "")))
	wantCode(t, err, errcode.MissingCredential)
}

// Section 3.2 (SIG-7): wimse-aud must name this recipient per trusted configuration,
// never per Host.
func TestHTTPSig07Sec3_2_AudienceMismatchRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req, _ := f.signedRequest()
	_, err := NewVerifier(f.validator, WithAudiences("https://other.example/api")).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.AudienceMismatch)
	// No configured audience: nothing is accepted, whatever Host says.
	req, _ = f.signedRequest()
	req.Host = "server.example"
	_, err = NewVerifier(f.validator).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.AudienceMismatch)
	// Exact comparison: no prefix or case folding.
	req, _ = f.signedRequest()
	_, err = NewVerifier(f.validator, WithAudiences(strings.ToUpper(testAudience), testAudience+"/")).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.AudienceMismatch)
}

// Section 3.3: wimse-sign-response true is serialized as a bare key.
func TestHTTPSig07Sec3_3_SignResponseIsBareBoolean(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req, _ := f.signedRequest(RequestSignResponse(true))
	if !strings.HasSuffix(req.Header.Get("Signature-Input"), ";wimse-sign-response") {
		t.Fatal(req.Header.Get("Signature-Input"))
	}
	req, _ = f.signedRequest(RequestSignResponse(false))
	if strings.Contains(req.Header.Get("Signature-Input"), "wimse-sign-response") {
		t.Fatal("false is sent as absent")
	}
	req.Header.Set("Signature-Input", req.Header.Get("Signature-Input")+`;wimse-sign-response="yes"`)
	_, err := f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.ParseError)
}

// Sections 3.4 and 3.5: the response signature covers "@status", the request's method,
// path and query (;req), the server's WIT and content; carries wimse-req-nonce and
// never wimse-aud.
func TestHTTPSig07Sec3_5_SignedResponse(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			f := newFixture(t, alg)
			sreq, nonce := f.signedRequest(RequestSignResponse(true))
			rr, err := f.verifier().VerifyRequest(ctx, sreq)
			mustOK(t, err)
			h := http.Header{"Content-Type": {"application/json"}}
			mustOK(t, f.server.signer.SignResponse(http.StatusCreated, h, []byte(`{"ok":true}`), sreq, rr.Nonce))
			si := h.Get("Signature-Input")
			if !strings.HasPrefix(si, `wimse=("@status" "@method";req "@path";req "@query";req "content-type" "content-digest" "workload-identity-token");created=`) ||
				!strings.HasSuffix(si, `;tag="wimse-workload-to-workload";wimse-req-nonce="`+nonce+`"`) || strings.Contains(si, "wimse-aud") {
				t.Fatalf("response Signature-Input %s", si)
			}
			creq := newRequest(t, http.MethodPost, testURL, `{"amount":100}`)
			res, err := f.verifier().VerifyResponse(ctx, response(http.StatusCreated, h, `{"ok":true}`), creq, nonce, true)
			mustOK(t, err)
			if res.WIT.Subject.String() != "spiffe://example.org/server" || res.ReqNonce != nonce {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

// Section 3.5: a client that sent wimse-sign-response MUST reject an unsigned response;
// one that did not MUST accept it.
func TestHTTPSig07Sec3_5_UnsignedResponseAfterSignResponseRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	creq := newRequest(t, http.MethodGet, testURL, "")
	_, err := f.verifier().VerifyResponse(ctx, response(200, http.Header{}, "hi"), creq, "n1", true)
	wantCode(t, err, errcode.MissingCredential)
	res, err := f.verifier().VerifyResponse(ctx, response(200, http.Header{}, "hi"), creq, "n1", false)
	if res != nil || err != nil {
		t.Fatalf("unsigned, not requested: %v %v", res, err)
	}
}

// Section 3.5: any signed response MUST be validated, requested or not.
func TestHTTPSig07Sec3_5_SignedResponseAlwaysValidated(t *testing.T) {
	f := newFixture(t, keys.ES256)
	sreq, nonce := f.signedRequest()
	h := http.Header{}
	mustOK(t, f.server.signer.SignResponse(200, h, []byte("ok"), sreq, nonce))
	creq := newRequest(t, http.MethodPost, testURL, "")
	_, err := f.verifier().VerifyResponse(ctx, response(500, h, "ok"), creq, nonce, false)
	wantCode(t, err, errcode.InvalidSignature)
}

// Section 3.4: wimse-req-nonce MUST equal the request's nonce.
func TestHTTPSig07Sec3_4_ResponseWrongReqNonceRejected(t *testing.T) {
	f := newFixture(t, keys.EdDSA)
	sreq, nonce := f.signedRequest()
	h := http.Header{}
	mustOK(t, f.server.signer.SignResponse(200, h, nil, sreq, nonce))
	creq := newRequest(t, http.MethodPost, testURL, "")
	_, err := f.verifier().VerifyResponse(ctx, response(200, h, ""), creq, "another-nonce", true)
	wantCode(t, err, errcode.RequestNonceMismatch)
	_, err = f.verifier().VerifyResponse(ctx, response(200, h, ""), creq, nonce, true)
	mustOK(t, err)
}

// Section 3.5 / dialog-binding section 7: a signed response cannot be moved to another
// request.
func TestHTTPSig07Sec3_5_ResponseMovedToAnotherRequestRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	sreq, nonce := f.signedRequest()
	h := http.Header{}
	mustOK(t, f.server.signer.SignResponse(200, h, []byte("ok"), sreq, nonce))
	for _, url := range []string{"https://server.example/api/admin", testURL + "?x=1"} {
		_, err := f.verifier().VerifyResponse(ctx, response(200, h, "ok"), newRequest(t, http.MethodPost, url, ""), nonce, true)
		wantCode(t, err, errcode.InvalidSignature)
	}
	_, err := f.verifier().VerifyResponse(ctx, response(200, h, "ok"), newRequest(t, http.MethodPut, testURL, ""), nonce, true)
	wantCode(t, err, errcode.InvalidSignature)
}

func TestHTTPSig07Sec3_5_ResponseProfile(t *testing.T) {
	f := newFixture(t, keys.ES256)
	sreq, nonce := f.signedRequest()
	creq := newRequest(t, http.MethodPost, testURL, "")
	// wimse-aud is forbidden in a response.
	h := http.Header{"Workload-Identity-Token": {f.server.wit}}
	p := f.params()
	p.ReqNonce = nonce
	si, sig, err := SignResponseWithParams(f.server.key, "wimse", []string{`"@status"`, `"@method";req`, `"@path";req`, `"@query";req`, `"workload-identity-token"`}, p, 200, h, sreq)
	mustOK(t, err)
	h.Set("Signature-Input", si)
	h.Set("Signature", sig)
	_, err = f.verifier().VerifyResponse(ctx, response(200, h, ""), creq, nonce, true)
	wantCode(t, err, errcode.ForbiddenParameter)
	// The server's WIT must be covered.
	p.Audience = ""
	si, sig, err = SignResponseWithParams(f.server.key, "wimse", []string{`"@status"`, `"@method";req`, `"@path";req`, `"@query";req`}, p, 200, h, sreq)
	mustOK(t, err)
	h.Set("Signature-Input", si)
	h.Set("Signature", sig)
	_, err = f.verifier().VerifyResponse(ctx, response(200, h, ""), creq, nonce, true)
	wantCode(t, err, errcode.MissingRequiredComponent)
	// Request-derived components without ;req are not response components.
	_, _, err = SignResponseWithParams(f.server.key, "wimse", []string{`"@status"`, `"@method"`}, p, 200, h, sreq)
	wantCode(t, err, errcode.InvalidRequest)
}

// Section 5.1 (SIG-6): signatures outside created..expires are rejected.
func TestHTTPSig07Sec5_1_ValidityWindow(t *testing.T) {
	f := newFixture(t, keys.ES256)
	v := f.verifier()

	req, _ := f.signedRequest()
	f.advance(DefaultTTL + 5*time.Second) // skew is the WIT validator's, 5s
	_, err := v.VerifyRequest(ctx, req)
	mustOK(t, err)
	req, _ = f.signedRequest()
	f.advance(DefaultTTL + 6*time.Second)
	_, err = v.VerifyRequest(ctx, req)
	wantCode(t, err, errcode.Expired)

	// Created in the future, beyond the skew.
	p := f.params()
	p.Created += 10
	p.Expires += 10
	req, _ = f.signedRequest()
	resignRequest(t, f.client.key, req, "wimse", defaultRequestComps(req), p)
	_, err = v.VerifyRequest(ctx, req)
	wantCode(t, err, errcode.CreatedInFuture)

	p = f.params()
	p.Expires = p.Created - 1
	resignRequest(t, f.client.key, req, "wimse", defaultRequestComps(req), p)
	_, err = v.VerifyRequest(ctx, req)
	wantCode(t, err, errcode.InvalidTimeWindow)

	p = f.params()
	p.Expires = p.Created + 3600
	resignRequest(t, f.client.key, req, "wimse", defaultRequestComps(req), p)
	_, err = v.VerifyRequest(ctx, req)
	wantCode(t, err, errcode.LifetimeTooLong)

	req, _ = f.signedRequest()
	f.advance(31 * time.Second)
	_, err = f.verifier(WithMaxAge(30*time.Second)).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.TooOld)
}

func defaultRequestComps(req *http.Request) []string {
	c := []string{`"@method"`, `"@path"`, `"@query"`}
	for _, n := range requestOptionalFields {
		if req.Header.Get(n) != "" {
			c = append(c, `"`+n+`"`)
		}
	}
	return c
}

// Section 3 (SIG-8): a nonce is accepted once.
func TestHTTPSig07Sec3_ReplayedNonceRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	store := newMemReplay()
	v := f.verifier(WithReplay(store))
	req, nonce := f.signedRequest()
	again := req.Clone(ctx)
	_, err := v.VerifyRequest(ctx, req)
	mustOK(t, err)
	again.Body = readCloser(`{"amount":100}`)
	_, err = v.VerifyRequest(ctx, again)
	wantCode(t, err, errcode.Replayed)
	ttl := store.seen[ReplayKeyPrefix+nonce]
	if ttl != DefaultTTL+5*time.Second {
		t.Fatalf("claimed for %v, want until expires + skew", ttl)
	}
	// A message that fails verification spends no nonce.
	req, nonce = f.signedRequest()
	req.Body = readCloser("tampered")
	_, err = v.VerifyRequest(ctx, req)
	wantCode(t, err, errcode.ContentDigestMismatch)
	if _, ok := store.seen[ReplayKeyPrefix+nonce]; ok {
		t.Fatal("a rejected message claimed its nonce")
	}
}

// Dialog-binding section 12: a check that cannot be completed rejects, and says so: a
// replay store that does not answer gives kind Incomplete.
func TestDialogBindingSec12_ReplayStoreErrorIsIncomplete(t *testing.T) {
	f := newFixture(t, keys.ES256)
	for _, storeErr := range []error{errcode.Unavailable(errcode.StoreUnavailable, errDown, "redis"), errDown} {
		store := newMemReplay()
		store.err = storeErr
		req, _ := f.signedRequest()
		_, err := f.verifier(WithReplay(store)).VerifyRequest(ctx, req)
		wantCode(t, err, errcode.StoreUnavailable)
		if errcode.KindOf(err) != errcode.Incomplete {
			t.Fatalf("kind %v, want Incomplete", errcode.KindOf(err))
		}
	}
}

func TestHTTPSig07Sec3_NewNonceEveryCall(t *testing.T) {
	f := newFixture(t, keys.ES256)
	seen := map[string]bool{}
	for range 100 {
		_, n := f.signedRequest()
		if seen[n] || len(n) < 22 {
			t.Fatalf("nonce %q repeated or short", n)
		}
		seen[n] = true
	}
}

// Dialog-binding section 7: a request carrying Dialog-Context MUST be signed over it.
func TestDialogBindingSec7_RequestCoversDialogContext(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, http.MethodPost, testURL, "{}")
	req.Header.Set("Dialog-Context", "dlg=D1; initiator=wimse://a.example/agent/a1")
	_, err := f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	srv := onTheWire(t, req)
	res, err := f.verifier().VerifyRequest(ctx, srv)
	mustOK(t, err)
	if !res.Covers(`"dialog-context"`) {
		t.Fatal("dialog-context not covered")
	}
	// A hop that changes the dialog context breaks the signature.
	srv = onTheWire(t, req)
	srv.Header.Set("Dialog-Context", "dlg=D2; initiator=wimse://a.example/agent/a1")
	_, err = f.verifier().VerifyRequest(ctx, srv)
	wantCode(t, err, errcode.InvalidSignature)
}

// Dialog-binding section 7: a receiver MUST reject a request that carries Dialog-Context
// with a WIMSE signature that does not cover it.
func TestDialogBindingSec7_UncoveredDialogContextRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	// Added after signing (by a hop).
	req, _ := f.signedRequest()
	req.Header.Set("Dialog-Context", "dlg=D1")
	_, err := f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.DialogContextNotCovered)
	// Present when signed, left out of the covered set.
	req = newRequest(t, http.MethodGet, testURL, "")
	req.Header.Set("Dialog-Context", "dlg=D1")
	_, err = f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	resignRequest(t, f.client.key, req, "wimse", []string{`"@method"`, `"@path"`, `"@query"`, `"workload-identity-token"`}, f.params())
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.DialogContextNotCovered)
}

// Dialog-binding section 7: a signed response carrying Dialog-Context MUST cover it.
func TestDialogBindingSec7_SignedResponseCoversDialogContext(t *testing.T) {
	f := newFixture(t, keys.EdDSA)
	sreq, nonce := f.signedRequest(RequestSignResponse(true))
	h := http.Header{"Dialog-Context": {"dlg=D1"}}
	mustOK(t, f.server.signer.SignResponse(200, h, nil, sreq, nonce))
	if !strings.Contains(h.Get("Signature-Input"), `"dialog-context"`) {
		t.Fatal(h.Get("Signature-Input"))
	}
	creq := newRequest(t, http.MethodPost, testURL, "")
	res, err := f.verifier().VerifyResponse(ctx, response(200, h, ""), creq, nonce, true)
	mustOK(t, err)
	if !res.Covers(`"dialog-context"`) {
		t.Fatal("not covered")
	}
	// Changed in transit.
	h2 := h.Clone()
	h2.Set("Dialog-Context", "dlg=D9")
	_, err = f.verifier().VerifyResponse(ctx, response(200, h2, ""), creq, nonce, true)
	wantCode(t, err, errcode.InvalidSignature)
	// Added to a response whose signature does not cover it.
	h3 := http.Header{}
	mustOK(t, f.server.signer.SignResponse(200, h3, nil, sreq, nonce))
	h3.Set("Dialog-Context", "dlg=D1")
	_, err = f.verifier().VerifyResponse(ctx, response(200, h3, ""), creq, nonce, true)
	wantCode(t, err, errcode.DialogContextNotCovered)
}

// RFC 9421 section 2.1: repeated fields are joined with ", ", each value trimmed.
func TestRFC9421Sec2_1_RepeatedFieldValues(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, http.MethodGet, testURL, "")
	req.Header["Txn-Token"] = nil
	req.Header.Add("Authorization", "  a  ")
	req.Header.Add("Authorization", "\tb")
	_, err := f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	m, _ := requestMessage(req)
	v, err := m.value(component{name: "authorization", key: "Authorization"})
	mustOK(t, err)
	if v != "a, b" {
		t.Fatalf("value %q", v)
	}
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	mustOK(t, err)
	// A header map written with a non-canonical key is still signed.
	req = newRequest(t, http.MethodGet, testURL, "")
	req.Header["txn-token"] = []string{"t1"}
	_, err = f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	if !strings.Contains(req.Header.Get("Signature-Input"), `"txn-token"`) {
		t.Fatal("non-canonical key not signed")
	}
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	mustOK(t, err)
}

func TestRFC9421Sec2_ComponentErrors(t *testing.T) {
	f := newFixture(t, keys.ES256)
	for _, tc := range []struct {
		extra string
		code  errcode.Code
	}{
		{`"@request-target"`, errcode.UnsupportedComponent},
		{`"@scheme"`, errcode.UnsupportedComponent},
		{`"@query-param";name="a"`, errcode.UnsupportedComponent},
		{`"@status"`, errcode.UnsupportedComponent},
		{`"content-type";sf`, errcode.UnsupportedComponent},
		{`"signature";key="x"`, errcode.UnsupportedComponent},
		{`"@method";req`, errcode.UnsupportedComponent},
		{`"Content-Type"`, errcode.ParseError},
		{`"@method"`, errcode.ParseError},
		{`x-absent`, errcode.ParseError},
		{`"x-absent"`, errcode.MissingComponent},
	} {
		req, _ := f.signedRequest()
		d, err := parseMember(req.Header.Values("Signature-Input"))
		mustOK(t, err)
		it, err := itemOf(tc.extra)
		mustOK(t, err)
		d.Items = append(d.Items, it)
		setInput(t, req, "wimse", d)
		_, err = f.verifier().VerifyRequest(ctx, req)
		if errcode.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.extra, err, tc.code)
		}
	}
	// A bare CR or LF in a covered value.
	req := newRequest(t, http.MethodGet, testURL, "")
	req.Header.Set("Txn-Token", "a\r\nb")
	_, err := f.client.signer.SignRequest(req, testAudience)
	wantCode(t, err, errcode.InvalidComponentValue)
	req, _ = f.signedRequest()
	req.Header["Workload-Identity-Token"][0] += "\n"
	_, err = f.verifier().VerifyRequest(ctx, req)
	if c := errcode.CodeOf(err); c != errcode.InvalidComponentValue && c != errcode.MalformedToken && c != errcode.InvalidEncoding {
		t.Fatalf("LF in WIT: %v", err)
	}
}

// Every size that comes from the network is bounded.
func TestBounds(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req, _ := f.signedRequest()
	_, err := f.verifier(WithMaxBodySize(4)).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.BodyTooLarge)
	req, _ = f.signedRequest()
	req.ContentLength = -1 // chunked: the bound holds while reading
	_, err = f.verifier(WithMaxBodySize(4)).VerifyRequest(ctx, req)
	wantCode(t, err, errcode.BodyTooLarge)

	req, _ = f.signedRequest()
	req.Header.Add("Signature-Input", `pad=("`+strings.Repeat("a", 17<<10)+`")`)
	_, err = f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.ParseError)
	req, _ = f.signedRequest()
	req.Header.Add("Signature", "pad=:"+strings.Repeat("AAAA", 5<<10)+":")
	_, err = f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.ParseError)

	p := f.params()
	p.Nonce = strings.Repeat("n", maxNonceLen+1)
	req, _ = f.signedRequest()
	resignRequest(t, f.client.key, req, "wimse", defaultRequestComps(req), p)
	_, err = f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.ParseError)

	req, _ = f.signedRequest()
	req.Header.Set("Content-Digest", "sha-256=:"+strings.Repeat("A", 2000)+":")
	_, err = f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.ParseError)
}

func TestMalformedSignatureFields(t *testing.T) {
	f := newFixture(t, keys.ES256)
	for _, tc := range []struct {
		si, sig string // "" keeps the signed value
		code    errcode.Code
	}{
		{si: `wimse=("@method"`, code: errcode.ParseError},
		{si: `wimse="not a list"`, code: errcode.ParseError},
		{sig: `wimse=:AAAA:`, code: errcode.MalformedSignature},
		{sig: `other=:` + b64.EncodeToString(make([]byte, 64)) + `:`, code: errcode.MalformedSignature},
		{sig: `wimse="abc"`, code: errcode.MalformedSignature},
		{sig: `wimse=:!!:`, code: errcode.ParseError},
	} {
		req, _ := f.signedRequest()
		if tc.si != "" {
			req.Header.Set("Signature-Input", tc.si)
		}
		if tc.sig != "" {
			req.Header.Set("Signature", tc.sig)
		}
		_, err := f.verifier().VerifyRequest(ctx, req)
		if errcode.CodeOf(err) != tc.code {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	// Signature without Signature-Input.
	req, _ := f.signedRequest()
	req.Header.Del("Signature-Input")
	_, err := f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.ParseError)
	// The base holds the canonical serialization: extra spaces in transit are harmless.
	req, _ = f.signedRequest()
	req.Header.Set("Signature-Input", strings.Replace(req.Header.Get("Signature-Input"), `("@method" "@path"`, `(  "@method"   "@path"`, 1))
	_, err = f.verifier().VerifyRequest(ctx, req)
	mustOK(t, err)
	// A parameter added in transit is not signed.
	req, _ = f.signedRequest()
	req.Header.Set("Signature-Input", strings.Replace(req.Header.Get("Signature-Input"), ";tag=", ";x=1.50;tag=", 1))
	_, err = f.verifier().VerifyRequest(ctx, req)
	wantCode(t, err, errcode.InvalidSignature)
	// A signer that signed a non-canonical serialization ("=?1" for a bare true) fails.
	creq := newRequest(t, http.MethodGet, testURL, "")
	_, err = f.client.signer.SignRequest(creq, testAudience, RequestSignResponse(true))
	mustOK(t, err)
	nonCanonical := creq.Header.Get("Signature-Input") + "=?1"
	il, err := parseMember([]string{nonCanonical})
	mustOK(t, err)
	comps, err := parseCovered(il.Items, false)
	mustOK(t, err)
	m, err := requestMessage(creq)
	mustOK(t, err)
	base, err := signatureBase(m, comps, strings.TrimPrefix(nonCanonical, "wimse="))
	mustOK(t, err)
	sig, err := f.client.key.Sign(base)
	mustOK(t, err)
	creq.Header.Set("Signature-Input", nonCanonical)
	creq.Header.Set("Signature", "wimse=:"+b64.EncodeToString(sig)+":")
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, creq))
	wantCode(t, err, errcode.InvalidSignature)
}

func TestSignerErrors(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, http.MethodGet, testURL, "")
	_, err := f.client.signer.SignRequest(req, "")
	wantCode(t, err, errcode.InvalidRequest)
	_, err = NewSigner(f.client.key, f.client.wit, WithLabel("Bad Label")).SignRequest(req, testAudience)
	wantCode(t, err, errcode.InvalidRequest)
	_, err = NewSigner(f.client.key, f.client.wit, WithTTL(0)).SignRequest(req, testAudience)
	wantCode(t, err, errcode.InvalidRequest)
	_, err = f.client.signer.SignRequest(req, "https://server.example/caf\u00e9")
	wantCode(t, err, errcode.InvalidRequest)
	err = f.server.signer.SignResponse(200, http.Header{}, nil, req, "")
	wantCode(t, err, errcode.InvalidRequest)
	// A signer replaces an earlier signature instead of adding a second WIMSE one.
	req, _ = f.signedRequest()
	req.URL.Scheme, req.URL.Host = "https", "server.example"
	_, err = f.client.signer.SignRequest(req, testAudience)
	mustOK(t, err)
	if len(req.Header.Values("Signature")) != 1 || strings.Contains(req.Header.Get("Signature-Input"), ",") {
		t.Fatal("old signature kept")
	}
}

func TestVerifyRequestWithWIT(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req, _ := f.signedRequest()
	_, err := f.verifier().VerifyRequestWithWIT(ctx, req, f.server.wit)
	wantCode(t, err, errcode.InvalidSignature)
	req, _ = f.signedRequest()
	res, err := f.verifier().VerifyRequestWithWIT(ctx, req, f.client.wit)
	mustOK(t, err)
	if res.WIT.Raw != f.client.wit {
		t.Fatal("wrong WIT")
	}
}

// MCP 2026-07-28 (SEP-2243): Mcp-Method and Mcp-Name repeat the body's method and tool
// for intermediaries, which decide by them. A signer covers them whenever the request
// carries them, a verifier refuses a signature that leaves either out
// (missing_required_component), and a value changed after signing fails the signature.
func TestMCP20260728_SignatureCoversMcpMethodAndName(t *testing.T) {
	f := newFixture(t, keys.ES256)
	signed := func() *http.Request {
		req := newRequest(t, http.MethodPost, testURL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book_hotel"}}`)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "book_hotel")
		_, err := f.client.signer.SignRequest(req, testAudience)
		mustOK(t, err)
		return req
	}
	req := signed()
	if si := req.Header.Get("Signature-Input"); !strings.Contains(si, `"mcp-method" "mcp-name")`) {
		t.Fatalf("Signature-Input does not cover the MCP fields: %s", si)
	}
	res, err := f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	mustOK(t, err)
	if !res.Covers(`"mcp-method"`) || !res.Covers(`"mcp-name"`) {
		t.Fatalf("result %+v", res)
	}
	for _, field := range []string{"Mcp-Method", "Mcp-Name"} {
		t.Run(field+" changed after signing", func(t *testing.T) {
			req := signed()
			req.Header.Set(field, "read_mail")
			_, err := f.verifier().VerifyRequest(ctx, onTheWire(t, req))
			wantCode(t, err, errcode.InvalidSignature)
		})
		t.Run(field+" left out", func(t *testing.T) {
			req := signed()
			var comps []string
			for _, c := range defaultRequestComps(req) {
				if c != `"`+strings.ToLower(field)+`"` {
					comps = append(comps, c)
				}
			}
			resignRequest(t, f.client.key, req, "wimse", comps, f.params())
			_, err := f.verifier().VerifyRequest(ctx, onTheWire(t, req))
			wantCode(t, err, errcode.MissingRequiredComponent)
		})
	}
}
