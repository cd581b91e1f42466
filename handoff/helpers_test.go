package handoff

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
)

var epoch = time.Unix(1_793_000_000, 0)

// Tests never sleep: time is a settable clock.
func newClock() *testkit.Clock { return testkit.NewClock(epoch) }

var forms = []Form{JWS, COSE}

// forEachForm runs the same test with JWS and with COSE signed handoffs.
func forEachForm(t *testing.T, f func(t *testing.T, w *world)) {
	t.Helper()
	for _, form := range forms {
		t.Run(form.String(), func(t *testing.T) { f(t, newWorld(t, form)) })
	}
}

// world is a set of agents with keys, a trust configuration that binds each agent's key
// to it, and a clock.
type world struct {
	t     testing.TB
	form  Form
	clock *testkit.Clock
	trust *StaticTrust
	keys  map[string]*keys.PrivateKey
}

func newWorld(t testing.TB, form Form) *world {
	return &world{t: t, form: form, clock: newClock(), trust: NewStaticTrust(), keys: map[string]*keys.PrivateKey{}}
}

// Agent IDs used throughout.
const (
	user    = "spiffe://u.example/agent/assistant"
	planner = "spiffe://a.example/agent/planner"
	coder   = "spiffe://b.example/agent/coder"
	tester  = "spiffe://c.example/agent/tester"
)

func agentID(i int) string { return fmt.Sprintf("spiffe://x.example/agent/a%02d", i) }

// key returns the agent's key, creating and trusting it on first use.
func (w *world) key(id string) *keys.PrivateKey {
	w.t.Helper()
	if k, ok := w.keys[id]; ok {
		return k
	}
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.trust.Bind(id, k.Public()); err != nil {
		w.t.Fatal(err)
	}
	w.keys[id] = k
	return k
}

// untrustedKey returns a key for id that the trust configuration does not hold.
func (w *world) untrustedKey() *keys.PrivateKey {
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		w.t.Fatal(err)
	}
	return k
}

// newOffer returns an offer from iss to aud, issued now, valid for 120 s.
func (w *world) newOffer(iss, aud string) *Offer {
	now := w.clock.Now().Unix()
	return &Offer{Hop: NewHopID(), Dialog: "ctx-7c1e", Iss: iss, Aud: aud, Iat: now, Exp: now + 120}
}

// acceptedOffer has r receive a new offer from planner to coder and wants it accepted;
// it returns the offer and the handoff that carried it.
func (w *world) acceptedOffer(t *testing.T, r *Receiver) (*Offer, *Handoff) {
	t.Helper()
	o := w.newOffer(planner, coder)
	h := &Handoff{Offer: w.sign(o)}
	d, err := receive(r, h)
	wantAccept(t, d, err)
	return o, h
}

func (w *world) sign(o *Offer) Signed {
	w.t.Helper()
	s, err := SignOffer(w.key(o.Iss), w.form, o)
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (w *world) signWith(k *keys.PrivateKey, o *Offer) Signed {
	w.t.Helper()
	s, err := SignOffer(k, w.form, o)
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (w *world) signStatus(st *Status) Signed {
	w.t.Helper()
	s, err := SignStatus(w.key(st.Iss), w.form, st)
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

// chain builds the handoffs of a path of agents ids[0] -> ids[1] -> ... -> ids[n]: the
// returned Handoff carries the last offer and the earlier ones as its chain. Each offer
// is issued a second after the one before it.
func (w *world) chain(ids ...string) (*Handoff, []*Offer) {
	w.t.Helper()
	n := len(ids) - 1
	start := w.clock.Now().Unix() - int64(n)
	var signed []Signed
	var offers []*Offer
	for i := 0; i < n; i++ {
		o := &Offer{Hop: NewHopID(), Dialog: "ctx-7c1e", Iss: ids[i], Aud: ids[i+1], Iat: start + int64(i), Exp: start + int64(i) + 120}
		if i > 0 {
			d := signed[i-1].Digest()
			o.Prev = &d
		}
		signed = append(signed, w.sign(o))
		offers = append(offers, o)
	}
	h := &Handoff{Offer: signed[n-1]}
	if n > 1 {
		h.Chain = signed[:n-1]
	}
	return h, offers
}

// receiver returns a receiver for self with memory records on the world's clock. The
// records lost nothing (section 8.4 does not apply): no offer can predate the world's
// keys. Tests of section 8.4 pass their own WithRecordsLostAt.
func (w *world) receiver(self string, opts ...ReceiverOption) (*Receiver, *store.MemoryRecords) {
	recs := store.NewMemoryRecords(store.WithClock(w.clock.Now))
	base := []ReceiverOption{WithClock(w.clock.Now), WithStatusKey(w.key(self)), WithRecordsLostAt(time.Time{})}
	return NewReceiver(self, w.trust, recs, append(base, opts...)...), recs
}

func (w *world) delegator(self string) *Delegator {
	w.t.Helper()
	d, err := NewDelegator(DelegatorConfig{Self: self, Key: w.key(self), Trust: w.trust, Form: w.form, Now: w.clock.Now})
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	if got := errcode.CodeOf(err); got != code {
		t.Fatalf("got %v (%v), want %s", got, err, code)
	}
}

func wantReject(t *testing.T, d *Decision, err error, reason Reason) {
	t.Helper()
	if d == nil {
		t.Fatalf("nil decision (%v)", err)
	}
	if d.Outcome != OutcomeRejected || d.Reason != reason || errcode.CodeOf(err) != reason.Code() {
		t.Fatalf("decision %s/%s (%v), want rejected/%s", d.Outcome, d.Reason, err, reason)
	}
}

func wantAccept(t *testing.T, d *Decision, err error) {
	t.Helper()
	if err != nil || d.Outcome != OutcomeAccepted {
		t.Fatalf("decision %s/%s: %v, want accepted", d.Outcome, d.Reason, err)
	}
}

func receive(r *Receiver, h *Handoff) (*Decision, error) {
	return r.Receive(context.Background(), Inbound{Handoff: h})
}

// replyStatus verifies a decision's reply and returns it.
func (w *world) replyStatus(t testing.TB, d *Decision) *VerifiedStatus {
	t.Helper()
	if d.Reply == nil {
		t.Fatal("no reply status")
	}
	vs, err := VerifyStatusSignature(context.Background(), w.trust, *d.Reply, 0)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// randReader is crypto/rand for go-cose's signer.
type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return cryptorand.Read(p) }

// hasCause reports whether err or any error it wraps carries code.
func hasCause(err error, code errcode.Code) bool { return errors.Is(err, errcode.New(code, "")) }
