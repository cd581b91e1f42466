package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// txnEnv is a TTS for trust domain a.example on a loopback HTTP server, with a workload
// whose key is in a file.
type txnEnv struct {
	url, keyFile, wit string
}

func newTxnEnv(t *testing.T, subjects ...tts.SubjectTokenHandler) txnEnv {
	t.Helper()
	clock := testkit.NewClock(time.Now())
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	w := d.Workload(t, "/agent/a1", keys.EdDSA)
	hs := httptest.NewUnstartedServer(nil)
	url := "http://" + hs.Listener.Addr().String()
	k, _ := keys.Generate(keys.ES256)
	replay := store.NewMemory()
	srv, err := tts.New(tts.Config{
		Issuer: url, TrustDomains: []string{"a.example"}, Keys: keys.NewRing(k, nil),
		Authenticators:  oauth.WIMSEAuthenticators(wit.NewValidator(d.Trust), replay, url+tts.PathToken),
		SubjectHandlers: append([]tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{url}, tts.SelfSignedOptions{})}, subjects...),
		Replay:          replay,
		Policy:          tts.Policy{Rules: []tts.Rule{{Workload: "wimse://a.example/"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = srv.Handler()
	hs.Start()
	t.Cleanup(hs.Close)
	keyFile := filepath.Join(t.TempDir(), "workload.jwk")
	b, _ := json.Marshal(w.Key)
	if err := os.WriteFile(keyFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return txnEnv{url: url, keyFile: keyFile, wit: w.WIT}
}

func TestTxnRequestVerify(t *testing.T) {
	e := newTxnEnv(t)
	jwks := e.url + tts.PathJWKS
	for _, proof := range []string{"wpt", "httpsig"} {
		tok := strings.TrimSpace(mustRun(t, "", "txn request", "--tts", e.url, "--wit", e.wit, "--key", e.keyFile,
			"--self-signed", "alice", "--scope", "trip.read", "--audience", "a.example", "--dialog", "D1", "--proof", proof,
			"--details", `{"purpose":"book"}`))
		out := mustRun(t, "", "txn verify", "--jwks", jwks, "--audience", "a.example", "--dialog", "D1", "--iss", e.url, tok)
		var c txntoken.Claims
		if err := json.Unmarshal(verifiedClaims(t, out), &c); err != nil || c.Dialog() != "D1" || c.Sub != "alice" || c.ReqWL != "wimse://a.example/agent/a1" {
			t.Fatalf("%s: %q %v", proof, out, err)
		}
		mustRun(t, "", "txn verify", "--jwks", jwks, "--audience", "a.example", "--dialog-context", `dlg="D1", initiator="wimse://a.example/agent/a1"`, tok)
		for _, c := range []struct {
			args []string
			code string
		}{
			{[]string{"--audience", "b.example"}, "audience_mismatch"},
			{[]string{"--audience", "a.example", "--dialog", "D2"}, "dialog_mismatch"},
			{[]string{"--audience", "a.example", "--now", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}, "expired"},
		} {
			_, errOut, code := dt(t, "", append(append([]string{"txn verify", "--jwks", jwks}, c.args...), tok)...)
			if code != 1 || !strings.HasPrefix(errOut, "error: "+c.code+"\n") {
				t.Fatalf("%v: exit %d %q", c.args, code, errOut)
			}
		}
	}
	// A JWKS file works as well as the URL.
	res, err := httpGet(jwks)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tts.jwks")
	_ = os.WriteFile(file, res, 0o600)
	tok := strings.TrimSpace(mustRun(t, "", "txn request", "--tts", e.url, "--wit", e.wit, "--key", e.keyFile,
		"--self-signed", "alice", "--scope", "trip.read", "--audience", "a.example"))
	mustRun(t, "", "txn verify", "--jwks", file, "--audience", "a.example", tok)

	// Refusals carry the TTS's code.
	_, errOut, code := dt(t, "", "txn request", "--tts", e.url, "--wit", e.wit, "--key", e.keyFile,
		"--subject-token", "opaque", "--subject-token-type", "refresh_token", "--scope", "trip.read", "--audience", "a.example")
	if code != 1 || !strings.HasPrefix(errOut, "error: unsupported_token_type\n") {
		t.Fatalf("exit %d %q", code, errOut)
	}
	_, _, code = dt(t, "", "txn request", "--tts", e.url, "--wit", e.wit, "--key", e.keyFile, "--scope", "x", "--audience", "a.example")
	if code != 2 {
		t.Fatalf("no subject token: exit %d", code)
	}
}

func httpGet(url string) ([]byte, error) {
	res, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}
