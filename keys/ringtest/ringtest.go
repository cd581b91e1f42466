// Package ringtest is the contract every keys.RingBackend must pass, for the tests of
// those backends: RunShared drives three replicas (shared Rotators) through rotations
// on one backend and checks that every token any replica signs verifies at every
// replica's JWKS while it lives (publish-before-use across replicas, oauth.md 1.12,
// workload-creds-02 section 3), and that concurrent changes are never lost.
//
// It lives in a non-test file so that the memory backend of package keys and the Redis
// backend of store/redisstore run one and the same suite.
package ringtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Rotation timing of RunShared.
const (
	PublishDelay  = 10 * time.Minute
	Retain        = 30 * time.Minute
	Period        = time.Hour
	TokenLifetime = 20 * time.Minute // at most Retain
	tick          = time.Minute
)

// RunShared checks what every keys.RingBackend must do; newBackend returns a fresh,
// empty backend.
func RunShared(t *testing.T, newBackend func(t *testing.T) keys.RingBackend) {
	t.Run("ThreeReplicasRotateUnderLoad", func(t *testing.T) {
		// Replicas reload every 1, 2 and 3 minutes: all well inside PublishDelay.
		res := Simulate(t, newBackend(t), []int{1, 2, 3}, PublishDelay)
		if res.Failures != 0 {
			t.Fatalf("%d of %d verifications failed; first: %s", res.Failures, res.Checks, res.First)
		}
		if res.Activations < 2 {
			t.Fatalf("only %d rotations completed, want at least 2", res.Activations)
		}
	})
	t.Run("ReloadSlowerThanPublishDelayFails", func(t *testing.T) {
		// The control: a replica that reloads only every 25 minutes misses a key that
		// the others sign with 10 minutes after it was published, so the check above
		// is one that can fail.
		res := Simulate(t, newBackend(t), []int{1, 25, 1}, PublishDelay)
		if res.Failures == 0 {
			t.Fatalf("a replica reloading slower than the publish delay went unnoticed (%d checks)", res.Checks)
		}
	})
	t.Run("ConcurrentRotateKeepsOneKey", func(t *testing.T) {
		testConcurrentRotate(t, newBackend(t))
	})
}

// Result is what Simulate saw.
type Result struct {
	Checks, Failures int
	First            string // the first failure
	Activations      int    // distinct active keys after the first
}

type token struct {
	kid     string
	msg     []byte
	sig     []byte
	expires time.Time
	by      int
	id      int
}

// Simulate runs len(reloadEvery) replicas on backend for two rotation periods and
// long enough for the second rotation to complete, in one-minute ticks of an injected clock: replica i steps (reloads) every
// reloadEvery[i] ticks, the replicas due at a tick step concurrently, then every
// replica signs a token with its active key, and every live token is verified against
// every replica's JWKS document as it is served at that moment.
func Simulate(t *testing.T, backend keys.RingBackend, reloadEvery []int, publishDelay time.Duration) Result {
	t.Helper()
	return SimulateReplicas(t, func(cfg keys.RotationConfig) (*keys.Rotator, error) {
		return keys.NewSharedRotator(context.Background(), backend, cfg)
	}, reloadEvery, publishDelay)
}

// SimulateReplicas is Simulate with replicas that newReplica opens (all on one shared
// backend or key store) with the configuration it is given.
func SimulateReplicas(t *testing.T, newReplica func(keys.RotationConfig) (*keys.Rotator, error), reloadEvery []int, publishDelay time.Duration) Result {
	t.Helper()
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	cfg := keys.RotationConfig{PublishDelay: publishDelay, Retain: Retain, Period: Period, Now: clock.Now}
	replicas := make([]*keys.Rotator, len(reloadEvery))
	for i := range replicas {
		r, err := newReplica(cfg)
		if err != nil {
			t.Fatal(err)
		}
		replicas[i] = r
	}
	var res Result
	seen := map[string]bool{replicas[0].Ring().Active().KID(): true}
	var live []token
	// verified[token.id][document] caches a token's result against one JWKS document:
	// the documents change only at rotations, and verifying is most of the cost.
	var verified []map[string]bool
	for n := 1; n <= int((2*Period+PublishDelay+TokenLifetime)/tick); n++ {
		clock.Advance(tick)
		var wg sync.WaitGroup
		errs := make([]error, len(replicas))
		for i, r := range replicas {
			if n%reloadEvery[i] != 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = r.Step()
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		now := clock.Now()
		for i, r := range replicas {
			k := r.Ring().Active()
			seen[k.KID()] = true
			msg := fmt.Appendf(nil, "token %d from replica %d", n, i)
			sig, err := k.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			live = append(live, token{kid: k.KID(), msg: msg, sig: sig, expires: now.Add(TokenLifetime), by: i, id: len(verified)})
			verified = append(verified, map[string]bool{})
		}
		kept := live[:0]
		for _, tok := range live {
			if now.Before(tok.expires) {
				kept = append(kept, tok)
			}
		}
		live = kept
		for j, r := range replicas {
			doc, err := r.Ring().JWKS()
			if err != nil {
				t.Fatal(err)
			}
			set, err := keys.ParseJWKS(doc)
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range live {
				res.Checks++
				ok, done := verified[tok.id][string(doc)]
				if !done {
					pub, lookupErr := set.LookupKey(ctx, tok.kid)
					err = lookupErr
					ok = err == nil && pub.Verify(tok.msg, tok.sig)
					verified[tok.id][string(doc)] = ok
				}
				if ok {
					continue
				}
				res.Failures++
				if res.First == "" {
					res.First = fmt.Sprintf("at +%v: %q (key %s, replica %d) against replica %d's JWKS: %v",
						now.Sub(testkit.Epoch), tok.msg, tok.kid, tok.by, j, err)
				}
			}
		}
	}
	res.Activations = len(seen) - 1
	return res
}

// racing runs before once before the first Store it sees, so that another replica's
// change lands between a replica's load and its store.
type racing struct {
	keys.RingBackend
	once   sync.Once
	before func()
}

func (r *racing) Store(ctx context.Context, s keys.RingState, v uint64) (uint64, error) {
	r.once.Do(r.before)
	return r.RingBackend.Store(ctx, s, v)
}

func testConcurrentRotate(t *testing.T, backend keys.RingBackend) {
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	cfg := keys.RotationConfig{PublishDelay: PublishDelay, Retain: Retain, Now: clock.Now}
	b, err := keys.NewSharedRotator(ctx, backend, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var bKID string
	race := &racing{RingBackend: backend}
	race.before = func() {
		if bKID, err = b.Rotate(); err != nil {
			t.Error(err)
		}
	}
	a, err := keys.NewSharedRotator(ctx, race, cfg)
	if err != nil {
		t.Fatal(err)
	}
	aKID, err := a.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if aKID != bKID || bKID == "" {
		t.Fatalf("two rotations under way: %q and %q", aKID, bKID)
	}
	state, _, _, err := backend.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var next int
	for _, k := range state.Keys {
		if k.State == keys.KeyNext {
			next++
		}
	}
	if next != 1 || len(state.Keys) != 2 {
		t.Fatalf("stored state has %d keys, %d next; want 2 and 1", len(state.Keys), next)
	}
	// Both replicas publish the one next key, and activate it at the same time.
	clock.Advance(PublishDelay)
	if err := a.Step(); err != nil {
		t.Fatal(err)
	}
	if err := b.Step(); err != nil {
		t.Fatal(err)
	}
	if a.Ring().Active().KID() != aKID || b.Ring().Active().KID() != aKID {
		t.Fatalf("replicas sign with %s and %s, want %s", a.Ring().Active().KID(), b.Ring().Active().KID(), aKID)
	}
}
