package ttsservice

import (
	"bufio"
	"context"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit/kittest"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// startWITIssuer builds the real cmd/wit-issuer and runs its embedded development
// default on a free loopback port, as `go run ./cmd/wit-issuer` would. It returns the
// base URL; the process is stopped (by its PID) when the test ends.
func startWITIssuer(t *testing.T, listen string) string {
	t.Helper()
	bin := kittest.Build(t, "github.com/dialogtrust/dialogtrust/cmd/wit-issuer")
	cmd := exec.Command(bin, "--listen", listen)
	cmd.Env = append(os.Environ(), "DIALOGTRUST_WIT_ISSUER_CONFIG=")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "wit-issuer listening on ") {
				lines <- l
			}
		}
	}()
	select {
	case l := <-lines:
		u := strings.TrimPrefix(l, "wit-issuer listening on ")
		return strings.Fields(u)[0]
	case <-time.After(20 * time.Second):
		t.Fatal("wit-issuer did not start")
	}
	return ""
}

// Acceptance, end to end on loopback with real servers: a workload gets a WIT from
// wit-issuer, then a Txn-Token from tts with a WPT and, separately, with an HTTP
// signature; each verifies through the published JWKS and carries tctx.dlg equal to the
// requested dialog. The TTS starts first: until the wit-issuer answers, its answer is
// "could not be completed", never acceptance.
func TestEndToEndWITIssuerAndTTS(t *testing.T) {
	ctx := context.Background()
	witAddr := freeLoopback(t)
	// The embedded default, with a free port for the wit-issuer and no retry delay so
	// that the test does not wait for the lazy JWKS fetch to be tried again.
	cfgYAML := strings.Replace(string(defaultYAML), "http://127.0.0.1:8080/", "http://"+witAddr+"/", 1)
	cfgYAML = strings.Replace(cfgYAML, "jwks_retry: 1s", "jwks_retry: 1ns", 1)
	cfgFile := testkit.WriteTemp(t, "tts.yaml", cfgYAML)
	ttsProc := start(t, []string{"--config", cfgFile, "--listen", "127.0.0.1:0"}, nil)
	md, err := oauth.Discover(ctx, nil, ttsProc.URL)
	if err != nil {
		t.Fatal(err)
	}

	workload := identifier.MustParse("wimse://dev.local/agent/a1")
	key, _ := keys.Generate(keys.ES256)
	selfSigned := func() string {
		tok, err := txntoken.NewSelfSignedToken(key, workload, "alice@dev.local", md.Issuer, "trip.read trip.book", 5*time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// Before the wit-issuer runs: could not be completed.
	early := &txntoken.Client{TokenEndpoint: md.TokenEndpoint, WIT: "eyJ0eXAiOiJ3aXQrand0IiwiYWxnIjoiRVMyNTYifQ.eyJzdWIiOiJ3aW1zZTovL2Rldi5sb2NhbC9hZ2VudC9hMSJ9.AAAA", Key: key, Proof: proof.WPT}
	_, err = early.Request(ctx, txntoken.Request{Audience: "dev.local", Scope: "trip.read", SubjectToken: selfSigned(), SubjectTokenType: tts.TokenTypeSelfSigned})
	if errcode.CodeOf(err) != errcode.KeysUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("before the wit-issuer: %v", err)
	}

	witURL := startWITIssuer(t, witAddr)
	wc, _, err := witissuer.NewClient(ctx, nil, witURL)
	if err != nil {
		t.Fatal(err)
	}
	wc.Subject = workload.String()
	w, err := wc.Request(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if getJSON(t, ttsProc.URL+tts.PathReadyz, nil) != 200 {
		t.Fatal("not ready once the wit-issuer answers")
	}
	rs, err := keys.NewRemoteSet(ctx, md.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}
	v := txntoken.NewVerifier(rs, "dev.local", txntoken.WithIssuer(md.Issuer))
	for _, pm := range []proof.Method{proof.WPT, proof.HTTPSig} {
		t.Run(pm.String(), func(t *testing.T) {
			c := &txntoken.Client{TokenEndpoint: md.TokenEndpoint, WIT: w.WIT, Key: key, Proof: pm}
			resp, err := c.Request(ctx, txntoken.Request{Audience: "dev.local", Scope: "trip.read", SubjectToken: selfSigned(), SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: "D-" + pm.String()})
			if err != nil {
				t.Fatal(err)
			}
			claims, err := v.Verify(ctx, resp.AccessToken)
			if err != nil {
				t.Fatal(err)
			}
			if claims.Dialog() != "D-"+pm.String() || claims.ReqWL != workload.String() || claims.Sub != "alice@dev.local" || claims.Scope != "trip.read" {
				t.Fatalf("claims %+v", claims)
			}
			if err := txntoken.DialogMatches(claims, "D-"+pm.String()); err != nil {
				t.Fatal(err)
			}
			if err := txntoken.DialogMatches(claims, "D-other"); errcode.CodeOf(err) != errcode.DialogMismatch {
				t.Fatalf("another dialog: %v", err)
			}
		})
	}
	// A Txn-Token for dev.local is not accepted in another trust domain.
	c := &txntoken.Client{TokenEndpoint: md.TokenEndpoint, WIT: w.WIT, Key: key, Proof: proof.WPT}
	resp, err := c.Request(ctx, txntoken.Request{Audience: "dev.local", Scope: "trip.read", SubjectToken: selfSigned(), SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: "D1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txntoken.NewVerifier(rs, "other.example").Verify(ctx, resp.AccessToken); errcode.CodeOf(err) != errcode.AudienceMismatch {
		t.Fatalf("other trust domain: %v", err)
	}
	if !strings.Contains(ttsProc.Stderr.String(), `"txn_token_sha256"`) || strings.Contains(ttsProc.Stderr.String(), resp.AccessToken) {
		t.Fatal("the log must name tokens by hash only")
	}
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := (&netListenConfig{}).listen()
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
