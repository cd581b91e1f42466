package witissuerservice

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// openKeys is the issuer's keys section without keys.shared, as kit.OpenKeys opens it.
func openKeys(kc kit.KeysConfig, retain time.Duration, now func() time.Time) (*keys.Rotator, string, error) {
	return kit.OpenLocalKeys(kc, keysSpec(retain, now))
}

// data_dir: the key is generated at first start into a 0600 file in a 0700 directory,
// reloaded on restart, and every rotation step is saved, so a restart keeps publishing
// the keys whose WITs are still valid.
func TestDataDirKeysPersist(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	dir := filepath.Join(t.TempDir(), "data")
	kc := kit.KeysConfig{Alg: keys.EdDSA, DataDir: dir, PublishDelay: time.Minute}
	r1, from, err := openKeys(kc, time.Hour, clock.Now)
	if err != nil || from != "generated" {
		t.Fatalf("%v %s", err, from)
	}
	st, err := os.Stat(filepath.Join(dir, KeyringFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("keyring file: %v %v", st, err)
	}
	if dst, _ := os.Stat(dir); dst.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v", dst.Mode().Perm())
	}
	kid1 := r1.Ring().Active().KID()
	if r1.Ring().Active().Alg() != keys.EdDSA {
		t.Fatal("alg not honoured")
	}
	r2, from, err := openKeys(kc, time.Hour, clock.Now)
	if err != nil || from != "loaded" || r2.Ring().Active().KID() != kid1 {
		t.Fatalf("restart: %v %s", err, from)
	}
	// Rotate and restart in the middle of the retention window.
	kid2, err := r2.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if err := r2.Step(); err != nil {
		t.Fatal(err)
	}
	r3, _, err := openKeys(kc, time.Hour, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Ring().Active().KID() != kid2 || len(r3.Ring().Public()) != 2 {
		t.Fatalf("after restart: active %s, %d published", r3.Ring().Active().KID(), len(r3.Ring().Public()))
	}
	b, _ := os.ReadFile(filepath.Join(dir, KeyringFile))
	var probe map[string]any
	if json.Unmarshal(b, &probe) != nil || !strings.Contains(string(b), `"retire_at"`) {
		t.Fatalf("keyring file: %s", b)
	}
	if st, _ := os.Stat(filepath.Join(dir, KeyringFile)); st.Mode().Perm() != 0o600 {
		t.Fatal("rewritten keyring file is not 0600")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".keyring-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

func TestSigningKeyFileAndConflicts(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	b, _ := json.Marshal(k)
	f := testkit.WriteTemp(t, "signing.jwk", string(b))
	r, from, err := openKeys(kit.KeysConfig{SigningKeyFile: f}, time.Hour, nil)
	if err != nil || from != "file" || r.Ring().Active().KID() != k.KID() {
		t.Fatalf("%v %s", err, from)
	}
	if _, _, err := openKeys(kit.KeysConfig{SigningKeyFile: f, DataDir: t.TempDir()}, time.Hour, nil); err == nil {
		t.Fatal("signing_key_file with data_dir accepted")
	}
	if _, _, err := openKeys(kit.KeysConfig{SigningKeyFile: f, RotationPeriod: time.Hour}, time.Hour, nil); err == nil {
		t.Fatal("rotation of a signing_key_file accepted")
	}
	if _, _, err := openKeys(kit.KeysConfig{SigningKeyFile: testkit.WriteTemp(t, "pub.jwk", `{"kty":"EC"}`)}, time.Hour, nil); err == nil {
		t.Fatal("a broken key file accepted")
	}
	r, from, err = openKeys(kit.KeysConfig{}, time.Hour, nil)
	if err != nil || from != "memory" || r.Ring().Active().Alg() != keys.ES256 {
		t.Fatalf("%v %s", err, from)
	}
}
