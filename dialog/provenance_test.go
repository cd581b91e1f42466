package dialog_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

type hopFixture struct {
	clock *testkit.Clock
	d     *testkit.Domain
	hops  map[string]*testkit.Workload
}

func newHops(t *testing.T) *hopFixture {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	f := &hopFixture{clock: clock, d: d, hops: map[string]*testkit.Workload{}}
	for _, n := range []string{"a1", "a2", "a3", "a4"} {
		f.hops[n] = d.Workload(t, "/agent/"+n, keys.EdDSA)
	}
	return f
}

// send makes hop `from` sign a request to `to` in dialog dc carrying prov, and has the
// receiver verify it; it returns the verified result.
func (f *hopFixture) send(t *testing.T, from, to string, dc *dialog.Context, prov *dialog.Provenance) *httpsig.Result {
	t.Helper()
	aud := "https://" + to + ".a.example/task"
	req := httptest.NewRequest("POST", aud, strings.NewReader(`{"task":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	dc.Set(req.Header)
	if prov != nil {
		req.Header.Set(dialog.ProvenanceHeader, prov.Value())
	}
	w := f.hops[from]
	if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(f.clock.Now)).SignRequest(req, aud); err != nil {
		t.Fatal(err)
	}
	res, err := httpsig.NewVerifier(f.d.Validator(), httpsig.WithAudiences(aud)).VerifyRequest(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *hopFixture) record(t *testing.T, res *httpsig.Result) dialog.HopRecord {
	t.Helper()
	r, err := dialog.RecordOf(res)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// chain builds A1 -> A2 -> A3 -> A4 in dc and returns the provenance A4 receives.
func (f *hopFixture) chain(t *testing.T, dc *dialog.Context) (*dialog.Provenance, []dialog.HopRecord) {
	r0 := f.record(t, f.send(t, "a1", "a2", dc, nil))
	p1, err := dialog.Append(nil, r0)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	r1 := f.record(t, f.send(t, "a2", "a3", dc, p1))
	p2, err := dialog.Append(p1, r1)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	f.send(t, "a3", "a4", dc, p2) // A4 verifies A3's own signature, which covers p2
	return p2, []dialog.HopRecord{r0, r1}
}

func rebuild(t *testing.T, recs ...dialog.HopRecord) *dialog.Provenance {
	var p *dialog.Provenance
	for _, r := range recs {
		var err error
		if p, err = dialog.Append(p, r); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// Section 9 / 12 step 2: earlier hops' proofs verify, and the origin is the initiator.
func TestDialogBindingSec9_ProvenanceVerifies(t *testing.T) {
	f := newHops(t)
	dc, _ := dialog.New("D1", f.hops["a1"].ID)
	p, _ := f.chain(t, dc)
	parsed, err := dialog.ParseProvenance(p.Value())
	if err != nil {
		t.Fatal(err)
	}
	chain, err := dialog.NewProvenanceVerifier(f.d.Validator(), 0).Verify(context.Background(), parsed, dc)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain.Hops) != 2 || chain.Hops[0] != f.hops["a1"].ID || chain.Hops[1] != f.hops["a2"].ID {
		t.Fatalf("hops %v", chain.Hops)
	}
}

// Section 9: a removed, reordered or inserted record, a record from another dialog and a
// forged origin are all rejected.
func TestDialogBindingSec9_ProvenanceTamperingRejected(t *testing.T) {
	f := newHops(t)
	dc, _ := dialog.New("D1", f.hops["a1"].ID)
	_, recs := f.chain(t, dc)
	other, _ := dialog.New("D2", f.hops["a1"].ID)
	_, otherRecs := f.chain(t, other)
	// A2 pretends to be the origin of D1 (its own first record, naming A1 as initiator).
	forged := f.record(t, f.send(t, "a2", "a3", dc, nil))

	v := dialog.NewProvenanceVerifier(f.d.Validator(), 0)
	for name, c := range map[string]struct {
		p    *dialog.Provenance
		code errcode.Code
	}{
		"removed first":  {rebuild(t, recs[1]), errcode.ProvenanceBroken},
		"reordered":      {rebuild(t, recs[1], recs[0]), errcode.ProvenanceBroken},
		"inserted":       {rebuild(t, recs[0], forged, recs[1]), errcode.ProvenanceBroken},
		"other dialog":   {rebuild(t, otherRecs[0]), errcode.ProvenanceDialogMismatch},
		"forged origin":  {rebuild(t, forged), errcode.InitiatorMismatch},
		"duplicated hop": {rebuild(t, recs[0], recs[0]), errcode.ProvenanceBroken},
	} {
		parsed, err := dialog.ParseProvenance(c.p.Value())
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(context.Background(), parsed, dc)
		if errcode.CodeOf(err) != c.code {
			t.Errorf("%s: got %v, want %s", name, err, c.code)
		}
	}
	// A tampered signature.
	bad := recs[0]
	bad.Sig = append([]byte(nil), bad.Sig...)
	bad.Sig[0] ^= 1
	parsed, _ := dialog.ParseProvenance(rebuild(t, bad).Value())
	if _, err := v.Verify(context.Background(), parsed, dc); errcode.CodeOf(err) != errcode.InvalidSignature {
		t.Errorf("tampered signature: %v", err)
	}
	// Too old.
	f.clock.Advance(time.Hour - 10*time.Second)
	parsed, _ = dialog.ParseProvenance(rebuild(t, recs[0]).Value())
	if _, err := v.Verify(context.Background(), parsed, dc); errcode.CodeOf(err) != errcode.TooOld {
		t.Errorf("old record: %v", err)
	}
}

// The current sender must cover the provenance field, so an intermediary cannot change it.
func TestDialogBindingSec9_ProvenanceFieldIsCovered(t *testing.T) {
	f := newHops(t)
	dc, _ := dialog.New("D1", f.hops["a1"].ID)
	p, recs := f.chain(t, dc)
	aud := "https://a4.a.example/task"
	req := httptest.NewRequest("POST", aud, nil)
	dc.Set(req.Header)
	req.Header.Set(dialog.ProvenanceHeader, p.Value())
	w := f.hops["a3"]
	if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(f.clock.Now)).SignRequest(req, aud); err != nil {
		t.Fatal(err)
	}
	req.Header.Set(dialog.ProvenanceHeader, rebuild(t, recs[0]).Value())
	_, err := httpsig.NewVerifier(f.d.Validator(), httpsig.WithAudiences(aud)).VerifyRequest(context.Background(), req)
	if errcode.CodeOf(err) != errcode.InvalidSignature {
		t.Fatalf("provenance swapped under the sender's signature: %v", err)
	}
}

func TestRecordRefusesAuthorization(t *testing.T) {
	f := newHops(t)
	dc, _ := dialog.New("D1", f.hops["a1"].ID)
	aud := "https://a2.a.example/task"
	req := httptest.NewRequest("POST", aud, nil)
	dc.Set(req.Header)
	req.Header.Set("Authorization", "Bearer secret")
	w := f.hops["a1"]
	if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(f.clock.Now)).SignRequest(req, aud); err != nil {
		t.Fatal(err)
	}
	res, err := httpsig.NewVerifier(f.d.Validator(), httpsig.WithAudiences(aud)).VerifyRequest(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dialog.RecordOf(res); err == nil {
		t.Fatal("a bearer token would travel to later hops")
	}
}

// Section 9: a forwarder checks, before sending, that the provenance it forwards was
// made in the dialog it continues; a record of another dialog, or of a base that does
// not parse, is refused with the receiver's codes.
func TestDialogBindingSec9_ProvenanceCheckContext(t *testing.T) {
	f := newHops(t)
	dc, _ := dialog.New("D1", f.hops["a1"].ID)
	p, recs := f.chain(t, dc)
	if err := p.CheckContext(dc); err != nil {
		t.Fatalf("the provenance of D1 in D1: %v", err)
	}
	other, _ := dialog.New("D2", f.hops["a1"].ID)
	if err := p.CheckContext(other); errcode.CodeOf(err) != errcode.ProvenanceDialogMismatch {
		t.Errorf("the provenance of D1 in D2: %v", err)
	}
	if err := p.CheckContext(nil); errcode.CodeOf(err) != errcode.InvalidProvenance {
		t.Errorf("no Dialog-Context: %v", err)
	}
	bad := recs[1]
	bad.Base = "not a base"
	if err := rebuild(t, recs[0], bad).CheckContext(dc); errcode.CodeOf(err) != errcode.InvalidProvenance {
		t.Errorf("a base that does not parse: %v", err)
	}
}

func FuzzParseProvenance(f *testing.F) {
	f.Add(`:eyJ3aXQiOiJhIiwiYmFzZSI6ImIiLCJzaWciOiJBQT09In0=:`)
	f.Add(`:AAAA:, :BBBB:`)
	f.Fuzz(func(t *testing.T, v string) {
		p, err := dialog.ParseProvenance(v)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("uncoded: %v", err)
			}
			return
		}
		if p.Value() != v || p.Len() == 0 || p.Len() > dialog.MaxProvenanceRecords {
			t.Fatalf("accepted %q", v)
		}
	})
}
