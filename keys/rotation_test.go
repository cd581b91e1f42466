package keys_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

func mustGenerate(t *testing.T, alg string) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(alg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func publishedKIDs(r *keys.Rotator) []string {
	var kids []string
	for _, k := range r.Ring().Public() {
		kids = append(kids, k.KID())
	}
	return kids
}

func step(t *testing.T, clock *testkit.Clock, r *keys.Rotator, d time.Duration) {
	t.Helper()
	clock.Advance(d)
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
}

// oauth.md 1.12, workload-creds-02 section 3: a periodic rotation publishes the new key
// at once, signs with it only after the publish delay, keeps the old key published for
// the retention time and then drops it; the saved state rebuilds the same ring.
func TestRotationPublishBeforeUse(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	first := mustGenerate(t, keys.ES256)
	var saved keys.RingState
	cfg := keys.RotationConfig{Period: time.Hour, PublishDelay: 10 * time.Minute, Retain: 20 * time.Minute, Now: clock.Now,
		OnChange: func(s keys.RingState) error { saved = s; return nil }}
	r, err := keys.NewStaticRotator(first, cfg)
	if err != nil {
		t.Fatal(err)
	}
	step(t, clock, r, 59*time.Minute)
	if kids := publishedKIDs(r); len(kids) != 1 {
		t.Fatalf("published early: %v", kids)
	}
	step(t, clock, r, time.Minute)
	kids := publishedKIDs(r)
	if len(kids) != 2 || r.Ring().Active().KID() != first.KID() {
		t.Fatalf("the new key must be published, not active: %v, active %s", kids, r.Ring().Active().KID())
	}
	second := kids[1]
	step(t, clock, r, 10*time.Minute-time.Second)
	if r.Ring().Active().KID() != first.KID() {
		t.Fatal("activated before the publish delay passed")
	}
	step(t, clock, r, time.Second)
	if r.Ring().Active().KID() != second || len(publishedKIDs(r)) != 2 {
		t.Fatalf("not activated after the publish delay: active %s, %v", r.Ring().Active().KID(), publishedKIDs(r))
	}
	// Restart from the saved state: same active key, old key still published, and the
	// retirement it had.
	r2, err := keys.NewRotator(saved, keys.RotationConfig{Period: time.Hour, Retain: time.Hour, Now: clock.Now})
	if err != nil || r2.Ring().Active().KID() != second || len(publishedKIDs(r2)) != 2 {
		t.Fatalf("rebuilt ring differs: %v", err)
	}
	step(t, clock, r, 20*time.Minute-time.Second)
	if len(publishedKIDs(r)) != 2 || len(publishedKIDs(r2)) != 2 {
		t.Fatal("old key left the JWKS before its retention ended")
	}
	step(t, clock, r, time.Second)
	if kids := publishedKIDs(r); len(kids) != 1 || kids[0] != second || len(saved.Keys) != 1 {
		t.Fatalf("old key kept past retention: %v published, %d saved", kids, len(saved.Keys))
	}
	if kids := publishedKIDs(r2); len(kids) != 1 || kids[0] != second {
		t.Fatalf("rebuilt ring kept the old key past its retirement: %v", kids)
	}
}

// The rotator's state survives a restart: rebuilt from its JSON, it publishes the same
// keys with the same retirement, and the periodic rotation starts by itself.
func TestRotatorStatePersistsAndPeriod(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	var saved []byte
	cfg := keys.RotationConfig{PublishDelay: time.Minute, Retain: 2 * time.Hour, Period: 24 * time.Hour, Now: clock.Now,
		OnChange: func(s keys.RingState) error {
			b, err := json.Marshal(s)
			saved = b
			return err
		}}
	r, err := keys.NewStaticRotator(mustGenerate(t, keys.ES256), cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := r.Ring().Active().KID()
	step(t, clock, r, 24*time.Hour) // starts the periodic rotation
	step(t, clock, r, time.Minute)  // activates
	second := r.Ring().Active().KID()
	if second == first {
		t.Fatal("periodic rotation did not happen")
	}
	if !strings.Contains(string(saved), `"d":`) {
		t.Fatal("saved state lacks the private keys")
	}
	var st keys.RingState
	if err := json.Unmarshal(saved, &st); err != nil {
		t.Fatal(err)
	}
	r2, err := keys.NewRotator(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Ring().Active().KID() != second || len(r2.Ring().Public()) != 2 {
		t.Fatalf("restored ring: active %s, %d public keys", r2.Ring().Active().KID(), len(r2.Ring().Public()))
	}
	clock.Advance(2 * time.Hour)
	if len(r2.Ring().Public()) != 1 {
		t.Fatal("restored ring kept the old key past its retirement")
	}
	// A failing save leaves the state as it was.
	cfg.OnChange = func(keys.RingState) error { return os.ErrPermission }
	r3, _ := keys.NewRotator(st, cfg)
	before := len(r3.State().Keys)
	if _, err := r3.Rotate(); err == nil || len(r3.State().Keys) != before || len(r3.Ring().Public()) != before {
		t.Fatal("a rotation that could not be saved went ahead")
	}
}

// Persist before use: when the state cannot be saved at activation, the new key does not
// sign, so a restart can never find an older active key than the one tokens went out
// with. Once saving works again, the activation goes ahead.
func TestRotationActivatesOnlyOnceSaved(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	failing := false
	cfg := keys.RotationConfig{PublishDelay: time.Minute, Retain: time.Hour, Now: clock.Now,
		OnChange: func(keys.RingState) error {
			if failing {
				return os.ErrPermission
			}
			return nil
		}}
	first := mustGenerate(t, keys.EdDSA)
	r, err := keys.NewStaticRotator(first, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kid2, err := r.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.Rotate(); err != nil || again != kid2 {
		t.Fatalf("a second Rotate during a rotation = %q, %v; want the same kid %q", again, err, kid2)
	}
	failing = true
	clock.Advance(time.Minute)
	if err := r.Step(); err == nil {
		t.Fatal("a failed save at activation was not reported")
	}
	if r.Ring().Active().KID() != first.KID() {
		t.Fatal("the new key signs although its activation was not saved")
	}
	for _, k := range r.State().Keys {
		if k.Key.KID() == kid2 && k.State != keys.KeyNext {
			t.Fatalf("state of the unsaved key is %q, want next", k.State)
		}
	}
	failing = false
	if err := r.Step(); err != nil || r.Ring().Active().KID() != kid2 {
		t.Fatalf("activation after the save works again: %v, active %s", err, r.Ring().Active().KID())
	}
	if len(r.Ring().Public()) != 2 {
		t.Fatal("the replaced key left the JWKS at once")
	}
}

func TestRotatorRejectsBadState(t *testing.T) {
	k1, k2 := mustGenerate(t, keys.ES256), mustGenerate(t, keys.ES256)
	cfg := keys.RotationConfig{Retain: time.Hour}
	for name, st := range map[string]keys.RingState{
		"no key":         {},
		"no active key":  {Keys: []keys.KeyRecord{{Key: k1, State: keys.KeyNext}}},
		"two active":     {Keys: []keys.KeyRecord{{Key: k1, State: keys.KeyActive}, {Key: k2, State: keys.KeyActive}}},
		"two next":       {Keys: []keys.KeyRecord{{Key: k1, State: keys.KeyActive}, {Key: k2, State: keys.KeyNext}, {Key: mustGenerate(t, keys.ES256), State: keys.KeyNext}}},
		"unknown state":  {Keys: []keys.KeyRecord{{Key: k1, State: keys.KeyActive}, {Key: k2, State: "pending"}}},
		"missing key":    {Keys: []keys.KeyRecord{{State: keys.KeyActive}}},
		"retain not set": {Keys: []keys.KeyRecord{{Key: k1, State: keys.KeyActive}}},
	} {
		c := cfg
		if name == "retain not set" {
			c.Retain = 0
		}
		if _, err := keys.NewRotator(st, c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// data_dir: the key is generated at first start into a 0600 file in a 0700 directory,
// reloaded on restart, and every rotation step is saved, so a restart keeps publishing
// the keys whose tokens are still valid.
func TestOpenRotatorDataDir(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	dir := filepath.Join(t.TempDir(), "data")
	src := keys.KeySource{DataDir: dir, StateFile: "state.json"}
	cfg := keys.RotationConfig{Alg: keys.EdDSA, PublishDelay: time.Minute, Retain: time.Hour, Now: clock.Now}
	r1, from, err := keys.OpenRotator(src, cfg)
	if err != nil || from != keys.GeneratedInDataDir {
		t.Fatalf("%v %v", err, from)
	}
	path := filepath.Join(dir, "state.json")
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", st, err)
	}
	if dst, _ := os.Stat(dir); dst.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v", dst.Mode().Perm())
	}
	if r1.Ring().Active().Alg() != keys.EdDSA {
		t.Fatal("alg not honoured")
	}
	r2, from, err := keys.OpenRotator(src, cfg)
	if err != nil || from != keys.LoadedFromDataDir || r2.Ring().Active().KID() != r1.Ring().Active().KID() {
		t.Fatalf("restart: %v %v", err, from)
	}
	kid2, err := r2.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	step(t, clock, r2, time.Minute)
	r3, _, err := keys.OpenRotator(src, cfg)
	if err != nil || r3.Ring().Active().KID() != kid2 || len(r3.Ring().Public()) != 2 {
		t.Fatalf("after restart: %v", err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatal("rewritten state file is not 0600")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".state-*")); len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
	// A caller's OnChange hears every change after the file is written.
	var heard int
	cfg.OnChange = func(s keys.RingState) error {
		heard++
		st, _, err := keys.LoadRingState(path, cfg)
		if err != nil || len(st.Keys) != len(s.Keys) {
			t.Errorf("OnChange before the file was written: %v", err)
		}
		return nil
	}
	r4, _, err := keys.OpenRotator(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r4.Rotate(); err != nil || heard != 1 {
		t.Fatalf("rotate: %v, OnChange called %d times", err, heard)
	}
	// A broken file is an error, not a fresh start.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := keys.OpenRotator(src, cfg); err == nil || !strings.Contains(err.Error(), "keys.data_dir") {
		t.Fatalf("broken state file: %v", err)
	}
}

func TestOpenRotatorSigningKeyFileAndConflicts(t *testing.T) {
	k := mustGenerate(t, keys.ES256)
	b, _ := json.Marshal(k)
	f := filepath.Join(t.TempDir(), "signing.jwk")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := keys.RotationConfig{Retain: time.Hour}
	r, from, err := keys.OpenRotator(keys.KeySource{SigningKeyFile: f}, cfg)
	if err != nil || from != keys.FromSigningKeyFile || r.Ring().Active().KID() != k.KID() {
		t.Fatalf("%v %v", err, from)
	}
	if _, _, err := keys.OpenRotator(keys.KeySource{SigningKeyFile: f, DataDir: t.TempDir(), StateFile: "s.json"}, cfg); err == nil {
		t.Fatal("signing_key_file with data_dir accepted")
	}
	periodic := cfg
	periodic.Period = time.Hour
	if _, _, err := keys.OpenRotator(keys.KeySource{SigningKeyFile: f}, periodic); err == nil {
		t.Fatal("rotation of a signing_key_file accepted")
	}
	pub := filepath.Join(t.TempDir(), "pub.jwk")
	_ = os.WriteFile(pub, []byte(`{"kty":"EC"}`), 0o600)
	if _, _, err := keys.OpenRotator(keys.KeySource{SigningKeyFile: pub}, cfg); err == nil || !strings.Contains(err.Error(), "keys.signing_key_file") {
		t.Fatalf("a broken key file: %v", err)
	}
	if _, _, err := keys.OpenRotator(keys.KeySource{SigningKeyFile: filepath.Join(t.TempDir(), "absent")}, cfg); err == nil {
		t.Fatal("a missing key file accepted")
	}
	if _, _, err := keys.OpenRotator(keys.KeySource{DataDir: t.TempDir(), StateFile: "../escape.json"}, cfg); err == nil {
		t.Fatal("a state file outside the data directory accepted")
	}
	r, from, err = keys.OpenRotator(keys.KeySource{}, cfg)
	if err != nil || from != keys.GeneratedInMemory || r.Ring().Active().Alg() != keys.ES256 {
		t.Fatalf("%v %v", err, from)
	}
}

// A data directory written by the TTS before it rotated through a Rotator (a list of
// records with published_at) still opens: the last activated key signs, the one it
// replaced stays published until its retire_at, a published key activates once its
// publish delay has passed, and the first change rewrites the file as a RingState.
func TestOpenRotatorReadsEarlierTTSKeyFile(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	dir := t.TempDir()
	old, cur, next := mustGenerate(t, keys.ES256), mustGenerate(t, keys.ES256), mustGenerate(t, keys.ES256)
	gone := mustGenerate(t, keys.ES256)
	jwk := func(k *keys.PrivateKey) json.RawMessage { b, _ := json.Marshal(k); return b }
	at := func(d time.Duration) *time.Time { t := testkit.Epoch.Add(d); return &t }
	legacy := []map[string]any{
		{"jwk": jwk(gone), "published_at": at(-5 * time.Hour), "activated_at": at(-5 * time.Hour), "retire_at": at(-time.Hour)},
		{"jwk": jwk(old), "published_at": at(-3 * time.Hour), "activated_at": at(-3 * time.Hour), "retire_at": at(30 * time.Minute)},
		{"jwk": jwk(cur), "published_at": at(-40 * time.Minute), "activated_at": at(-30 * time.Minute)},
		{"jwk": jwk(next), "published_at": at(-5 * time.Minute)},
	}
	b, _ := json.Marshal(legacy)
	path := filepath.Join(dir, "tts-keys.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	src := keys.KeySource{DataDir: dir, StateFile: "tts-keys.json"}
	cfg := keys.RotationConfig{PublishDelay: 10 * time.Minute, Retain: time.Hour, Now: clock.Now}
	r, from, err := keys.OpenRotator(src, cfg)
	if err != nil || from != keys.LoadedFromDataDir {
		t.Fatalf("%v %v", err, from)
	}
	if r.Ring().Active().KID() != cur.KID() {
		t.Fatal("the last activated key does not sign")
	}
	if kids := strings.Join(publishedKIDs(r), " "); !strings.Contains(kids, old.KID()) || !strings.Contains(kids, next.KID()) ||
		strings.Contains(kids, gone.KID()) || len(publishedKIDs(r)) != 3 {
		t.Fatalf("published %v", publishedKIDs(r))
	}
	step(t, clock, r, 5*time.Minute-time.Second)
	if r.Ring().Active().KID() != cur.KID() {
		t.Fatal("the published key activated before its publish delay passed")
	}
	step(t, clock, r, time.Second)
	if r.Ring().Active().KID() != next.KID() {
		t.Fatal("the published key did not activate after its publish delay")
	}
	var st keys.RingState
	if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &st) != nil || len(st.Keys) != 3 {
		t.Fatalf("the file was not rewritten as a RingState: %s", b)
	}
	step(t, clock, r, 25*time.Minute)
	if kids := publishedKIDs(r); strings.Contains(strings.Join(kids, " "), old.KID()) {
		t.Fatalf("the key retired by the earlier file is still published: %v", kids)
	}
	// An empty list is a fresh start, as it was.
	empty := t.TempDir()
	_ = os.WriteFile(filepath.Join(empty, "tts-keys.json"), []byte("[]"), 0o600)
	if _, from, err := keys.OpenRotator(keys.KeySource{DataDir: empty, StateFile: "tts-keys.json"}, cfg); err != nil || from != keys.GeneratedInDataDir {
		t.Fatalf("empty key list: %v %v", err, from)
	}
}
