package kit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/keys/pkcs11/softhsmtest"
)

// Two replicas of the TTS's keys on one SoftHSM2 token rotate every second under load
// (issue 27): each replica's JWKS is served over HTTP, every signature a replica makes
// is verified at once through the other replica's JWKS (a keys.RemoteSet that refetches
// on an unknown kid), and none may fail; at least two rotations must complete, each key
// created in the token and published by both before either signs with it.
func TestPKCS11TwoReplicasRotateUnderLoad(t *testing.T) {
	env := softhsmtest.Setup(t, "replicas")
	old := PKCS11Settle
	PKCS11Settle = 50 * time.Millisecond
	t.Cleanup(func() { PKCS11Settle = old })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	kc := pkcs11Keys(env, "replicas", writePIN(t, softhsmtest.PIN))
	kc.RotationPeriod, kc.PublishDelay, kc.StepInterval, kc.JWKSMaxAge = time.Second, 1500*time.Millisecond, 100*time.Millisecond, time.Second
	var replicas [2]*Keys
	var verifiers [2]*keys.RemoteSet
	for i := range replicas {
		ks, err := OpenKeys(ctx, kc, nil, KeysSpec{Name: "tts", Retain: time.Hour}, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ks.Close)
		replicas[i] = ks
		srv := httptest.NewServer(ks.Rotator.Ring())
		t.Cleanup(srv.Close)
		if verifiers[i], err = keys.NewRemoteSet(ctx, srv.URL, keys.WithMinRefresh(200*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	var checks, failures atomic.Int64
	var mu sync.Mutex
	kids := map[string]bool{}
	first := ""
	deadline := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			by, other := w%2, 1-w%2
			for n := 0; time.Now().Before(deadline); n++ {
				k := replicas[by].Rotator.Ring().Active()
				msg := fmt.Appendf(nil, "token %d of worker %d", n, w)
				sig, err := k.Sign(msg)
				if err == nil {
					var pub *keys.PublicKey
					if pub, err = verifiers[other].LookupKey(ctx, k.KID()); err == nil && !pub.Verify(msg, sig) {
						err = fmt.Errorf("signature does not verify")
					}
				}
				checks.Add(1)
				mu.Lock()
				kids[k.KID()] = true
				if err != nil {
					failures.Add(1)
					if first == "" {
						first = fmt.Sprintf("replica %d key %s at replica %d: %v", by, k.KID(), other, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d verifications failed; first: %s", failures.Load(), checks.Load(), first)
	}
	if len(kids) < 3 {
		t.Fatalf("%d signing keys seen in %d signatures, want at least 3 (two rotations)", len(kids), checks.Load())
	}
	t.Logf("%d signatures by %d keys, all verified at the other replica", checks.Load(), len(kids))
}
