package proxyservice

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11/softhsmtest"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// pkcs11Section is a pkcs11 member for the key labelled label in the token "agents".
func pkcs11Section(env *softhsmtest.Env, pinFile, label string) string {
	return fmt.Sprintf("{module: %s, token_label: agents, pin_file: %s, label: %s}", env.Module, pinFile, label)
}

func writeTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The proxy's handoff keys in a PKCS#11 token (issue 27): a1's egress and t1's ingress
// sign their offers and statuses with keys the operator created in a SoftHSM2 token,
// and the handoff completes, so each signature made in the token verified with the
// public key the other's trust document lists. Nothing is written outside the token
// but the files the test wrote itself.
func TestProxyPKCS11HandoffKeys(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // every temporary file from here on is under tmp
	env := softhsmtest.Setup(t, "agents")
	a1 := env.GenerateKey(t, "agents", "a1-handoff", false)
	t1 := env.GenerateKey(t, "agents", "t1-handoff", false)
	dir := t.TempDir()
	pin := writeTestFile(t, dir, "pin", softhsmtest.PIN+"\n")
	trust, _ := json.Marshal(map[string]any{
		"wimse://a.example/agent/a1": map[string]any{"keys": []any{a1}},
		"wimse://a.example/tool/t1":  map[string]any{"keys": []any{t1}},
	})
	trustFile := writeTestFile(t, dir, "trust.json", string(trust))
	section := func(label string) string {
		return fmt.Sprintf("handoff: {pkcs11: %s, trust_file: %s}\n", pkcs11Section(env, pin, label), trustFile)
	}
	witURL, ttsURL := proxyDomain(t)
	t.Run("flow", func(t *testing.T) {
		handoffThroughProxies(t, witURL, ttsURL, section("a1-handoff"), section("t1-handoff"))
	})
	// The proxies have stopped (the subtest's cleanup): every file under tmp is the
	// token's or one the test wrote.
	wrote := map[string]bool{"pin": true, "trust.json": true, "softhsm2.conf": true, "proxy.yaml": true}
	err := filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasPrefix(path, env.TokenDir+string(filepath.Separator)) && !wrote[d.Name()] {
			t.Errorf("a file was written outside the token: %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The workload's assertion key in a PKCS#11 token (issue 27): the WIT issuer knows a1
// by the public half of the token's key, and the proxy gets its WIT with assertions
// signed in the token (it is ready, which needs the WIT). The control: the same proxy
// with a token key the issuer does not know gets no WIT and is not ready.
func TestProxyPKCS11AssertionKey(t *testing.T) {
	env := softhsmtest.Setup(t, "agents")
	pub := env.GenerateKey(t, "agents", "a1-assertion", false)
	env.GenerateKey(t, "agents", "unknown-assertion", false)
	pin := writeTestFile(t, t.TempDir(), "pin", softhsmtest.PIN)

	srv := httptest.NewUnstartedServer(nil)
	witURL := "http://" + srv.Listener.Addr().String()
	witKey, _ := keys.Generate(keys.ES256)
	rot, err := keys.NewStaticRotator(witKey, keys.RotationConfig{Retain: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	replay := store.NewMemory()
	assertion, err := witissuer.NewAssertion(witURL, []witissuer.RegisteredWorkload{{ID: identifier.MustParse("wimse://a.example/agent/a1"), Keys: []*keys.PublicKey{pub}}}, replay, witissuer.AssertionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := witissuer.New(witissuer.Config{Issuer: witURL, Keys: rot, Replay: replay,
		Policy: witissuer.Policy{TrustDomains: []string{"a.example"}}, Routes: []witissuer.Route{{Path: "/v1/wit", Methods: []witissuer.Authenticator{assertion}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = ws.Handler()
	srv.Start()
	t.Cleanup(srv.Close)

	proxyWith := func(label string) string {
		y := egressYAML(witURL, "http://127.0.0.1:2", "http://127.0.0.1:3/invoke")
		return strings.Replace(y, "auth: development}", "auth: assertion, pkcs11: "+pkcs11Section(env, pin, label)+"}", 1)
	}
	for label, wantReady := range map[string]bool{"a1-assertion": true, "unknown-assertion": false} {
		t.Run(label, func(t *testing.T) {
			urls := startProxy(t, proxyWith(label))
			// Ready within 5 s, or (the control) never ready in 1 s.
			wait := time.Second
			if wantReady {
				wait = 5 * time.Second
			}
			ready := false
			for deadline := time.Now().Add(wait); !ready && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				res, err := http.Get(urls["ops"] + "/readyz")
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				ready = res.StatusCode == http.StatusOK
			}
			if ready != wantReady {
				t.Fatalf("ready %v, want %v", ready, wantReady)
			}
		})
	}
}

// A proxy whose key in a token cannot be used does not start (issue 27), with a stable
// code and words that say which key: a wrong PIN (pkcs11_login_failed), a token that
// is not there (pkcs11_unavailable), a label with no key pair (unknown_key), a key
// that can leave the token (invalid_key). Each is tried alone, so that no other
// session of the process is logged in to the token. -check-config, which opens
// nothing, refuses what is wrong in the section itself.
func TestProxyPKCS11RefusedAtStart(t *testing.T) {
	env := softhsmtest.Setup(t, "agents")
	env.GenerateKey(t, "agents", "a1-handoff", false)
	env.GenerateKey(t, "agents", "leaky", true)
	dir := t.TempDir()
	pin := writeTestFile(t, dir, "pin", softhsmtest.PIN)
	wrongPIN := writeTestFile(t, dir, "wrong-pin", "not-the-pin")
	trustFile := writeTestFile(t, dir, "trust.json", "{}")
	handoff := func(p string) string { return fmt.Sprintf("handoff: {pkcs11: %s, trust_file: %s}\n", p, trustFile) }
	for name, c := range map[string]struct {
		section string
		code    errcode.Code
		says    string
	}{
		"WrongPIN":     {pkcs11Section(env, wrongPIN, "a1-handoff"), errcode.PKCS11LoginFailed, "refused the PIN"},
		"MissingToken": {strings.Replace(pkcs11Section(env, pin, "a1-handoff"), "token_label: agents", "token_label: absent", 1), errcode.PKCS11Unavailable, `no token "absent"`},
		"MissingLabel": {pkcs11Section(env, pin, "absent"), errcode.UnknownKey, `0 key pairs labelled "absent"`},
		"Extractable":  {pkcs11Section(env, pin, "leaky"), errcode.InvalidKey, "can leave the token"},
	} {
		t.Run(name, func(t *testing.T) {
			file := testkit.WriteTemp(t, "proxy.yaml", checkedIngressYAML+handoff(c.section))
			err := kit.Run(t.Context(), Program, []string{"-config", file}, nil, io.Discard, io.Discard, func(string) { t.Error("the proxy started") })
			if !errcode.Is(err, c.code) || !strings.Contains(err.Error(), "handoff.pkcs11: ") || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want %s saying %q", err, c.code, c.says)
			}
			t.Log(err)
		})
	}
	good := pkcs11Section(env, pin, "a1-handoff")
	for name, c := range map[string]struct{ yaml, want string }{
		"handoff key in token": {checkedIngressYAML + handoff(good), ""},
		"assertion in token":   {strings.Replace(checkedEgressYAML, "auth: development}", "auth: assertion, pkcs11: "+good+"}", 1), ""},
		"file and token":       {checkedIngressYAML + fmt.Sprintf("handoff: {key_file: k.jwk, pkcs11: %s, trust_file: t.json}\n", good), "key_file and pkcs11 exclude each other"},
		"assertion file+token": {strings.Replace(checkedEgressYAML, "auth: development}", "auth: assertion, assertion_key_file: k.jwk, pkcs11: "+good+"}", 1), "assertion_key_file and pkcs11 exclude"},
		"token, no auth":       {strings.Replace(checkedEgressYAML, "auth: development}", "auth: development, pkcs11: "+good+"}", 1), "workload.pkcs11: only with auth assertion"},
		"no PIN":               {checkedIngressYAML + handoff(fmt.Sprintf("{module: %s, token_label: agents, label: x}", env.Module)), "exactly one of pin_file and pin_env"},
		"slot and token":       {checkedIngressYAML + handoff(fmt.Sprintf("{module: %s, slot: 0, token_label: agents, pin_env: P, label: x}", env.Module)), "exactly one of slot and token_label"},
		"no module":            {checkedIngressYAML + handoff("{token_label: agents, pin_env: P}"), "module"},
		"bad label":            {checkedIngressYAML + handoff(`{module: /m.so, token_label: agents, pin_env: P, label: "a\tb"}`), "printable ASCII"},
		"unknown member":       {checkedIngressYAML + handoff("{module: /m.so, token_label: agents, pin_env: P, pin: x}"), "pin"},
	} {
		expectCheckConfig(t, name, c.yaml, c.want)
	}
}
