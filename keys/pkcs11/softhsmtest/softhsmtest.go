// Package softhsmtest gives tests a real SoftHSM2 token (Debian's softhsm2, 2.6): a
// SoftHSM2 configuration and token directory in a temporary directory, named by
// SOFTHSM2_CONF for the test, and tokens initialised with softhsm2-util. A test that
// needs it skips when SoftHSM2 is not installed or the binary was built without cgo,
// and fails instead under CI=true (.ci/run installs softhsm2).
//
// It lives in a non-test file so that the tests of keys/pkcs11 and of the services'
// wiring (cmd/internal/kit) use one and the same setup.
package softhsmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys/pkcs11"
)

// DefaultModule is where Debian's softhsm2 package installs the PKCS#11 module;
// DIALOGTRUST_TEST_PKCS11_MODULE overrides it.
const DefaultModule = "/usr/lib/softhsm/libsofthsm2.so"

// PIN and SOPIN of every token Setup initialises.
const (
	PIN   = "dialogtrust-user-pin"
	SOPIN = "dialogtrust-so-pin"
)

// Env is a SoftHSM2 set up for one test.
type Env struct {
	Module   string
	Conf     string // the SOFTHSM2_CONF file
	TokenDir string // where SoftHSM2 keeps the tokens' objects
}

// Setup creates the configuration and initialises one token per label (before the
// module is loaded: SoftHSM2 reads its token directory when it is initialised). It sets
// SOFTHSM2_CONF for the test (t.Setenv: not for parallel tests), so every Token of the
// test must be closed at its end, which lets the next test load the module afresh.
func Setup(t *testing.T, labels ...string) *Env {
	t.Helper()
	module := os.Getenv("DIALOGTRUST_TEST_PKCS11_MODULE")
	if module == "" {
		module = DefaultModule
	}
	util, err := exec.LookPath("softhsm2-util")
	if err == nil {
		_, err = os.Stat(module)
	}
	if err == nil && !pkcs11.Available {
		err = fmt.Errorf("this test binary was built without cgo")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("SoftHSM2 is needed under CI=true (.ci/run installs softhsm2): %v", err)
		}
		t.Skipf("SoftHSM2 not usable: %v", err)
	}
	dir := t.TempDir()
	env := &Env{Module: module, Conf: filepath.Join(dir, "softhsm2.conf"), TokenDir: filepath.Join(dir, "tokens")}
	if err := os.Mkdir(env.TokenDir, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n", env.TokenDir)
	if err := os.WriteFile(env.Conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", env.Conf)
	for _, label := range labels {
		cmd := exec.Command(util, "--init-token", "--free", "--label", label, "--pin", PIN, "--so-pin", SOPIN)
		cmd.Env = append(os.Environ(), "SOFTHSM2_CONF="+env.Conf)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("softhsm2-util --init-token %s: %v\n%s", label, err, out)
		}
	}
	return env
}

// Config is a pkcs11.Config for the token labelled token and the key label label.
func (e *Env) Config(token, label string) pkcs11.Config {
	return pkcs11.Config{Module: e.Module, TokenLabel: token, PIN: PIN, Label: label}
}
