package handoff

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/store"
)

// benchChain is a chain of 16 offers plus the current one, each from its own agent with
// its own ES256 key, as JWS.
func benchChain(b *testing.B) (*world, *Handoff) {
	w := newWorld(b, JWS)
	ids := path(18)
	h, _ := w.chain(ids...)
	if len(h.Chain) != 16 {
		b.Fatal(len(h.Chain))
	}
	return w, h
}

// BenchmarkVerifyChain16 verifies an offer and its chain of 16 (section 5.1 step 1 and
// section 5.5): 17 signed-form checks, payload decodings, key lookups, ES256
// verifications and digests. Compare with BenchmarkRawES256Verify17.
func BenchmarkVerifyChain16(b *testing.B) {
	w, h := benchChain(b)
	self := agentID(17)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, res, err := VerifyChain(ctx, w.trust, self, h, ChainPolicy{}, DefaultSkew, 0)
		if err != nil || !res.Full() {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawES256Verify17 is the floor: the 17 crypto/ecdsa verifications of the same
// signing inputs (SHA-256 of the input and ecdsa.Verify), nothing else.
func BenchmarkRawES256Verify17(b *testing.B) {
	w, h := benchChain(b)
	type item struct {
		pub   *ecdsa.PublicKey
		input []byte
		r, s  *big.Int
	}
	var items []item
	for _, s := range append(append([]Signed{}, h.Chain...), h.Offer) {
		raw := string(s.Octets)
		i := strings.LastIndexByte(raw, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(raw[i+1:])
		e, err := parseElement(s, "offer", 0)
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, item{pub: w.keys[e.iss].Public().Crypto().(*ecdsa.PublicKey), input: []byte(raw[:i]),
			r: new(big.Int).SetBytes(sig[:32]), s: new(big.Int).SetBytes(sig[32:])})
	}
	if len(items) != 17 {
		b.Fatal(len(items))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, it := range items {
			d := sha256.Sum256(it.input)
			if !ecdsa.Verify(it.pub, d[:], it.r, it.s) {
				b.Fatal("verify")
			}
		}
	}
}

// BenchmarkReceiveChain16 is the whole of section 5.1 at a delegate with memory
// records (each iteration a fresh receiver so that the offer is new).
func BenchmarkReceiveChain16(b *testing.B) {
	w, h := benchChain(b)
	self := agentID(17)
	ctx := context.Background()
	now := func() time.Time { return epoch }
	b.ReportAllocs()
	for b.Loop() {
		r := NewReceiver(self, w.trust, store.NewMemoryRecords(), WithClock(now), WithRecordsLostAt(time.Time{}))
		if _, err := r.Receive(ctx, Inbound{Handoff: h}); err != nil {
			b.Fatal(err)
		}
	}
}
