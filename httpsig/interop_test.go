package httpsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/yaronf/httpsign"
)

// httpsignVerifier is an independent RFC 9421 verifier for key pub. Its clock checks
// are off: it reads the wall clock, these tests run on the fixture's.
func httpsignVerifier(t *testing.T, pub *keys.PublicKey, fields httpsign.Fields) *httpsign.Verifier {
	t.Helper()
	cfg := httpsign.NewVerifyConfig().SetVerifyCreated(false).SetRejectExpired(false)
	var v *httpsign.Verifier
	var err error
	switch k := pub.Crypto().(type) {
	case *ecdsa.PublicKey:
		v, err = httpsign.NewP256Verifier(*k, cfg, fields)
	case ed25519.PublicKey:
		v, err = httpsign.NewEd25519Verifier(k, cfg, fields)
	default:
		t.Fatalf("key type %T", k)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A request this package signs verifies with httpsign, and a changed one does not.
func TestInteropHTTPSignVerifiesRequest(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			f := newFixture(t, alg)
			req := newRequest(t, http.MethodPost, testURL+"?q=a%20b&r", `{"amount":100}`+"\n")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Add("Txn-Token", " t1 ")
			req.Header.Add("Txn-Token", "t2")
			req.Header.Set("Dialog-Context", `dlg=D1; initiator="wimse://a.example/agent/a1"`)
			_, err := f.client.signer.SignRequest(req, testAudience, RequestSignResponse(true))
			mustOK(t, err)
			fields := httpsign.Headers("@method", "@path", "@query", "content-type", "content-digest", "txn-token", "workload-identity-token", "dialog-context")
			v := httpsignVerifier(t, f.client.key.Public(), fields)
			srv := onTheWire(t, req)
			if err := httpsign.VerifyRequest(DefaultLabel, *v, srv); err != nil {
				t.Fatalf("httpsign rejects our request: %v", err)
			}
			if err := httpsign.ValidateContentDigestHeader(srv.Header.Values("Content-Digest"), &srv.Body, []string{httpsign.DigestSha256}); err != nil {
				t.Fatalf("httpsign rejects our Content-Digest: %v", err)
			}
			srv = onTheWire(t, req)
			srv.URL.Path = "/api/admin"
			if err := httpsign.VerifyRequest(DefaultLabel, *v, srv); err == nil {
				t.Fatal("httpsign accepts a rerouted request")
			}
		})
	}
}

// A response this package signs verifies with httpsign, bound to its request by ;req.
func TestInteropHTTPSignVerifiesResponse(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			f := newFixture(t, alg)
			sreq, nonce := f.signedRequest(RequestSignResponse(true))
			h := http.Header{"Content-Type": {"application/json"}, "Dialog-Context": {"dlg=D1"}}
			body := []byte(`{"status":"accepted"}`)
			mustOK(t, f.server.signer.SignResponse(http.StatusOK, h, body, sreq, nonce))
			fields := *httpsign.NewFields().AddHeaders("@status", "content-type", "content-digest", "workload-identity-token", "dialog-context").
				AddHeaderExt("@method", false, false, true, false).
				AddHeaderExt("@path", false, false, true, false).
				AddHeaderExt("@query", false, false, true, false)
			v := httpsignVerifier(t, f.server.key.Public(), fields)
			creq := newRequest(t, http.MethodPost, testURL, "")
			res := response(http.StatusOK, h, string(body))
			if err := httpsign.VerifyResponse(DefaultLabel, *v, res, creq); err != nil {
				t.Fatalf("httpsign rejects our response: %v", err)
			}
			other := newRequest(t, http.MethodPost, testURL+"/other", "")
			if err := httpsign.VerifyResponse(DefaultLabel, *v, response(http.StatusOK, h, string(body)), other); err == nil {
				t.Fatal("httpsign accepts the response for another request")
			}
		})
	}
}

// httpsign's own signatures carry alg (and here keyid), which the profile forbids: a
// plain RFC 9421 signature is not a WIMSE one.
func TestInteropHTTPSignSignatureIsNotWIMSE(t *testing.T) {
	f := newFixture(t, keys.EdDSA)
	req := newRequest(t, http.MethodGet, testURL, "")
	req.Header.Set("Workload-Identity-Token", f.client.wit)
	cfg := httpsign.NewSignConfig().SetTag(Tag).SetNonce("n-123456").SetKeyID("k1").SetExpires(f.clock().Unix() + 60)
	s, err := httpsign.NewEd25519Signer(f.client.key.Signer().(ed25519.PrivateKey), cfg, httpsign.Headers("@method", "@path", "@query", "workload-identity-token"))
	mustOK(t, err)
	si, sig, err := httpsign.SignRequest("sig1", *s, req)
	mustOK(t, err)
	req.Header.Set("Signature-Input", si)
	req.Header.Set("Signature", sig)
	_, err = f.verifier().VerifyRequest(ctx, onTheWire(t, req))
	wantCode(t, err, errcode.ForbiddenParameter)
}

// A real HTTP exchange on loopback: the client signs and asks for a signed response,
// the server verifies, reads the body and signs its response, the client verifies it.
func TestLoopbackRoundTrip(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			f := newFixture(t, alg)
			store := newMemReplay()
			sv := f.verifier(WithReplay(store), WithRequiredComponents(`"dialog-context"`))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res, err := sv.VerifyRequest(r.Context(), r)
				if err != nil {
					w.WriteHeader(http.StatusBadRequest)
					_ = json.NewEncoder(w).Encode(map[string]string{"error": string(errcode.CodeOf(err))})
					return
				}
				in, _ := io.ReadAll(r.Body)
				out, _ := json.Marshal(map[string]any{"caller": res.WIT.Subject.String(), "echo": string(in)})
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Dialog-Context", r.Header.Get("Dialog-Context"))
				if err := f.server.signer.SignResponse(http.StatusOK, w.Header(), out, r, res.Nonce); err != nil {
					w.WriteHeader(http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(out)
			}))
			defer srv.Close()
			cv := f.verifier()

			send := func(req *http.Request) (*http.Response, error) {
				return srv.Client().Do(req)
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/transfer?x=1", bytes.NewReader([]byte(`{"amount":100}`)))
			mustOK(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Dialog-Context", "dlg=D1")
			nonce, err := f.client.signer.SignRequest(req, testAudience, RequestSignResponse(true))
			mustOK(t, err)
			resp, err := send(req)
			mustOK(t, err)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("server said %d %s", resp.StatusCode, b)
			}
			rr, err := cv.VerifyResponse(ctx, resp, req, nonce, true)
			mustOK(t, err)
			if rr.WIT.Subject.String() != "spiffe://example.org/server" || !rr.Covers(`"dialog-context"`) {
				t.Fatalf("response result %+v", rr)
			}
			var got map[string]string
			mustOK(t, json.NewDecoder(resp.Body).Decode(&got))
			if got["caller"] != "spiffe://example.org/client" || got["echo"] != `{"amount":100}` {
				t.Fatalf("server saw %v", got)
			}

			// The same signed request again is a replay.
			again := req.Clone(ctx)
			again.Body, _ = req.GetBody()
			resp2, err := send(again)
			mustOK(t, err)
			var e map[string]string
			_ = json.NewDecoder(resp2.Body).Decode(&e)
			resp2.Body.Close()
			if resp2.StatusCode != http.StatusBadRequest || e["error"] != string(errcode.Replayed) {
				t.Fatalf("replay: %d %v", resp2.StatusCode, e)
			}
		})
	}
}

// net/http sniffs a Content-Type when the handler sets none; the signer sets the same
// value first, so that what is sent is what was signed.
func TestHTTPSig07Sec3_5_ResponseContentTypeNotSetByHandler(t *testing.T) {
	f := newFixture(t, keys.ES256)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := f.verifier().VerifyRequest(r.Context(), r)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		body := []byte("<html>ok</html>")
		if err := f.server.signer.SignResponse(http.StatusOK, w.Header(), body, r, res.Nonce); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api", nil)
	mustOK(t, err)
	nonce, err := f.client.signer.SignRequest(req, testAudience, RequestSignResponse(true))
	mustOK(t, err)
	resp, err := srv.Client().Do(req)
	mustOK(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") == "" {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	res, err := f.verifier().VerifyResponse(ctx, resp, req, nonce, true)
	mustOK(t, err)
	if !res.Covers(`"content-type"`) {
		t.Fatal("content-type not covered")
	}
}
