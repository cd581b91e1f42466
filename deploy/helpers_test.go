package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The main module, whose commands the deployment kit runs. The tests run in deploy/.
const mainModule = "github.com/dialogtrust/dialogtrust"

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(b), "module "+mainModule+"\n") {
		t.Fatalf("%s is not the root of %s (%v)", root, mainModule, err)
	}
	return root
}

// goBin is the go command: go test puts its own GOROOT/bin first on the PATH of the
// tests it runs, so it is found there.
func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// binDir holds the commands built for this test binary; TestMain removes it.
var (
	binDir   string
	binMu    sync.Mutex
	binBuilt = map[string]string{}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dialogtrust-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// command builds cmd/<name> of the main module once and returns the binary's path.
func command(t testing.TB, name string) string {
	t.Helper()
	return buildCommand(t, name, "")
}

// commandCgo builds cmd/<name> with cgo on or off, as the images build it: off for the
// static images, on for the hsm images (deploy/docker, target hsm), which alone can
// load a PKCS#11 module.
func commandCgo(t testing.TB, name string, cgo bool) string {
	t.Helper()
	return buildCommand(t, name, map[bool]string{true: "1", false: "0"}[cgo])
}

// buildCommand builds cmd/<name> once per CGO_ENABLED value ("" leaves go's default).
func buildCommand(t testing.TB, name, cgo string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	key := name
	if cgo != "" {
		key = name + "-cgo" + cgo
	}
	if p, ok := binBuilt[key]; ok {
		return p
	}
	out := filepath.Join(binDir, key)
	cmd := exec.Command(goBin(), "build", "-o", out, "./cmd/"+name)
	cmd.Dir = repoRoot(t)
	if cgo != "" {
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=%s go build ./cmd/%s: %v\n%s", cgo, name, err, b)
	}
	binBuilt[key] = out
	return out
}

// cleanEnv is the environment for the commands: the caller's, less every dialogtrust
// override, so that a variable set where the tests run cannot change what is checked.
func cleanEnv(extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DIALOGTRUST_") {
			env = append(env, kv)
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// checkConfig runs `<service> -check-config --config file` with env, as the deployment
// would start it: the real loader (strict YAML, environment overrides, flags) and the
// checks that need no listener, file, key or store.
func checkConfig(t testing.TB, service, file string, env map[string]string) error {
	t.Helper()
	return checkConfigWith(t, command(t, service), service, file, env)
}

// checkConfigWith is checkConfig with the binary bin (commandCgo).
func checkConfigWith(t testing.TB, bin, service, file string, env map[string]string) error {
	t.Helper()
	cmd := exec.Command(bin, "-check-config", "--config", file)
	cmd.Env = cleanEnv(env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s -check-config --config %s: %v\n%s", service, file, err, out.String())
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s -check-config --config %s did not finish in 30s", service, file)
	}
}

// TestCheckConfigRefusesBadFiles keeps checkConfig honest: a file the loader must refuse
// is refused, so the acceptance of the kit's files means something.
func TestCheckConfigRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ service, name, body string }{
		{"wit-issuer", "unknown-member", "trust_domains: [a.example]\nroutes: [{path: /v1/wit, methods: [assertion]}]\nauth: {assertion: {}}\nlisten_port: 1\n"},
		{"wit-issuer", "dev-not-loopback", "listen: 0.0.0.0:8080\ntrust_domains: [a.example]\nauth: {dev: {prefixes: [\"wimse://a.example/\"]}}\nroutes: [{path: /v1/wit, methods: [dev]}]\n"},
		{"tts", "no-keys", "listen: 0.0.0.0:8081\ntrust_domains: [a.example]\npolicy: {rules: [{workload: \"wimse://a.example/\"}]}\n"},
		{"tts", "bad-store", "development: true\ntrust_domains: [a.example]\nstore: {type: etcd}\npolicy: {rules: [{workload: \"wimse://a.example/\"}]}\n"},
	} {
		f := filepath.Join(dir, tc.service+"-"+tc.name+".yaml")
		if err := os.WriteFile(f, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := checkConfig(t, tc.service, f, nil); err == nil {
			t.Errorf("%s accepted %s", tc.service, tc.name)
		}
	}
	// And an environment override takes part, as it would at start.
	f := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(f, []byte("development: true\ntrust_domains: [a.example]\npolicy: {rules: [{workload: \"wimse://a.example/\"}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkConfig(t, "tts", f, nil); err != nil {
		t.Fatal(err)
	}
	if err := checkConfig(t, "tts", f, map[string]string{"DIALOGTRUST_TTS_NO_SUCH_OPTION": "1"}); err == nil {
		t.Error("an unknown environment override was accepted")
	}
}

// serviceConfig is a deployment's configuration file of cmd/wit-issuer or cmd/tts, read
// loosely for the cross-checks (ports, paths, URLs); -check-config judges it strictly.
type serviceConfig struct {
	path string
	raw  map[string]any
}

func readServiceConfig(t testing.TB, path string) serviceConfig {
	t.Helper()
	return serviceConfig{path: path, raw: readYAMLFile(t, path)}
}

// get follows a path of members ("store", "redis", "addrs").
func (c serviceConfig) get(path ...string) any {
	var v any = c.raw
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func (c serviceConfig) str(path ...string) string {
	s, _ := c.get(path...).(string)
	return s
}

// listenPort is the port of listen (host:port).
func (c serviceConfig) listenPort(t testing.TB) int {
	t.Helper()
	l := c.str("listen")
	_, port, err := net.SplitHostPort(l)
	if err != nil {
		t.Fatalf("%s: listen %q: %v", c.path, l, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("%s: listen %q: %v", c.path, l, err)
	}
	return n
}

// files returns every file the configuration names (members ending in _file, and
// data_dir), with the member path, so that a check can say where each must come from.
func (c serviceConfig) files() map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				name := strings.TrimPrefix(prefix+"."+k, ".")
				if s, ok := e.(string); ok && s != "" && (strings.HasSuffix(k, "_file") || k == "data_dir") {
					out[name] = s
				}
				walk(name, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		}
	}
	walk("", c.raw)
	return out
}

// checkServingCerts checks generate.sh's serving certificates: secrets/ca.crt holds the
// CA, and the wit-issuer's and the TTS's certificates in secrets chain to it and are good
// for the host of the issuer their configuration in configDir names. It returns the CA.
func checkServingCerts(t testing.TB, secrets, configDir string) *x509.CertPool {
	t.Helper()
	roots := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(secrets, "ca.crt"))
	if err != nil || !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("%s/ca.crt: %v", secrets, err)
	}
	for _, svc := range []string{"wit-issuer", "tts"} {
		pair, err := tls.LoadX509KeyPair(filepath.Join(secrets, svc+".crt"), filepath.Join(secrets, svc+".key"))
		if err != nil {
			t.Fatalf("%s: %v", svc, err)
		}
		cfg := readServiceConfig(t, filepath.Join(configDir, svc+".yaml"))
		u, err := url.Parse(cfg.str("issuer"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: u.Hostname(), Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %s certificate for %s: %v", secrets, svc, u.Hostname(), err)
		}
	}
	return roots
}

// kustomizeTree returns kubectl and a copy of deploy/k8s to render overlays in (the
// tests write generate.sh's files into it, never into the working tree); without
// kubectl the test skips.
func kustomizeTree(t *testing.T) (kubectl, tree string) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed; the rendered overlay is not checked")
	}
	tree = filepath.Join(t.TempDir(), "k8s")
	if err := os.CopyFS(tree, os.DirFS(k8sDir)); err != nil {
		t.Fatal(err)
	}
	return kubectl, tree
}

// generateOr runs generate.sh in overlay and reports true; without openssl it writes
// placeholder files with placeholders instead and reports false.
func generateOr(t *testing.T, overlay string, placeholders func(*testing.T, string)) bool {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Log("openssl not installed: placeholder files instead of generate.sh")
		placeholders(t, overlay)
		return false
	}
	runGenerate(t, overlay)
	return true
}
