package kit

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11/softhsmtest"
)

// keys.pkcs11 is checked before anything is opened (issue 27).
func TestPKCS11KeysCheck(t *testing.T) {
	slot := 0
	good := func() KeysConfig {
		return KeysConfig{PKCS11: &PKCS11KeysConfig{Module: "/m.so", TokenLabel: "t", PINEnv: "PIN"}}
	}
	if !pkcs11.Available {
		// Built without cgo, even a good section is refused, as the start would refuse
		// it: -check-config catches a static image configured for a token.
		if err := good().CheckShared(StoreConfig{}, RotationStepInterval); !errcode.Is(err, errcode.PKCS11Unavailable) {
			t.Fatalf("built without cgo, a good section: got %v, want pkcs11_unavailable", err)
		}
		return
	}
	if err := good().CheckShared(StoreConfig{}, RotationStepInterval); err != nil {
		t.Fatalf("a good section refused: %v", err)
	}
	for name, change := range map[string]func(*KeysConfig){
		"WithDataDir":        func(kc *KeysConfig) { kc.DataDir = "/d" },
		"WithSigningKeyFile": func(kc *KeysConfig) { kc.SigningKeyFile = "/k" },
		"WithShared":         func(kc *KeysConfig) { kc.Shared = &SharedKeysConfig{SecretEnv: "S"} },
		"NoModule":           func(kc *KeysConfig) { kc.PKCS11.Module = "" },
		"SlotAndLabel":       func(kc *KeysConfig) { kc.PKCS11.Slot = &slot },
		"TwoPINSources":      func(kc *KeysConfig) { kc.PKCS11.PINFile = "/p" },
		"NoPIN":              func(kc *KeysConfig) { kc.PKCS11.PINEnv = "" },
		"EdDSA":              func(kc *KeysConfig) { kc.Alg = "EdDSA" },
		"ShortPublishDelay":  func(kc *KeysConfig) { kc.PublishDelay = time.Minute },
	} {
		kc := good()
		change(&kc)
		if err := kc.CheckShared(StoreConfig{}, RotationStepInterval); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func pkcs11Keys(env *softhsmtest.Env, token, pinFile string) KeysConfig {
	return KeysConfig{Alg: "ES256", PKCS11: &PKCS11KeysConfig{Module: env.Module, TokenLabel: token, PINFile: pinFile}}
}

func writePIN(t *testing.T, pin string) string {
	p := filepath.Join(t.TempDir(), "pin")
	if err := os.WriteFile(p, []byte(pin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A wrong PIN or a missing token is refused at start by the keys opener with a stable
// code; the right PIN opens the token, and the keys are labelled for the service
// (issue 27).
func TestPKCS11KeysRefusedAtStart(t *testing.T) {
	env := softhsmtest.Setup(t, "svc")
	old := PKCS11Settle
	PKCS11Settle = time.Millisecond
	t.Cleanup(func() { PKCS11Settle = old })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	spec := KeysSpec{Name: "tts", Retain: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, tc := range map[string]struct {
		kc   KeysConfig
		code errcode.Code
	}{
		"WrongPIN":     {pkcs11Keys(env, "svc", writePIN(t, "wrong")), errcode.PKCS11LoginFailed},
		"MissingToken": {pkcs11Keys(env, "absent", writePIN(t, softhsmtest.PIN)), errcode.PKCS11Unavailable},
	} {
		if _, err := OpenKeys(ctx, tc.kc, nil, spec, logger); !errcode.Is(err, tc.code) {
			t.Errorf("%s: got %v, want %s", name, err, tc.code)
		}
	}
	ks, err := OpenKeys(ctx, pkcs11Keys(env, "svc", writePIN(t, softhsmtest.PIN)), nil, spec, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	if !ks.Rotator.Ring().Active().External() || !strings.Contains(ks.From, `"dialogtrust-tts"`) {
		t.Fatalf("keys from %s, external %v", ks.From, ks.Rotator.Ring().Active().External())
	}
	for _, ready := range ks.Ready {
		if err := ready(ctx); err != nil {
			t.Fatalf("not ready: %v", err)
		}
	}
}
