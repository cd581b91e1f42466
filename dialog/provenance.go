package dialog

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dunglas/httpsfv"
)

// EXPERIMENTAL: multi-hop provenance (dialog-binding section 9).
//
// The draft it cites for carrying earlier hops' proofs (draft-reddy-wimse-aggregate-
// signatures) could not be obtained, so this is dialogtrust's own, clearly-labelled
// extension, to be replaced when that draft can be implemented:
//
//   - ProvenanceHeader carries an RFC 8941 List of Byte Sequences, one per earlier hop,
//     origin first. Each decodes to a JSON record {"wit", "base", "sig"}: the hop's WIT,
//     the RFC 9421 signature base its WIMSE HTTP signature was made over, and that
//     signature. A record is self-contained: anyone who trusts the hop's WIT issuer can
//     check it.
//   - Order and completeness come from nesting: the signature of hop k covers the
//     dialog-provenance field it sent, which held the records of hops 0..k-1; and the
//     current sender's signature covers the whole field (package httpsig requires it).
//     Removing, reordering or inserting a record changes octets some signature covers.
//   - Every record's base covers dialog-context with the same value as the request
//     being verified: a record from another dialog, or from before a hop changed the
//     context, does not verify.
//   - The origin record's WIT sub must equal the initiator in Dialog-Context
//     (section 12 step 2).
//
// A record holds the values of the fields its hop covered, Txn-Token and WIT included
// (section 15: later hops learn every forwarder's identity). A request that carried an
// Authorization credential is never turned into a record, so no bearer token travels on.

// ProvenanceHeader is the experimental field that carries earlier hops' records.
const ProvenanceHeader = "Dialog-Provenance"

// Bounds on the provenance field.
const (
	MaxProvenanceRecords = 8
	MaxProvenanceSize    = 64 << 10
	DefaultProvenanceAge = 5 * time.Minute
)

// HopRecord is one earlier hop's proof.
type HopRecord struct {
	WIT  string `json:"wit"`
	Base string `json:"base"`
	Sig  []byte `json:"sig"`
}

// RecordOf turns a verified request signature into the record a forwarder passes on.
func RecordOf(res *httpsig.Result) (HopRecord, error) {
	if res == nil || res.WIT == nil || len(res.Base) == 0 {
		return HopRecord{}, errcode.New(errcode.InvalidRequest, "no verified signature to record")
	}
	if res.Covers(`"authorization"`) {
		return HopRecord{}, errcode.New(errcode.InvalidRequest, "a request that carried Authorization is not recorded: its credential would travel to later hops")
	}
	return HopRecord{WIT: res.WIT.Raw, Base: string(res.Base), Sig: res.Signature}, nil
}

// Provenance is a parsed provenance field: records in hop order and the exact value.
type Provenance struct {
	records []HopRecord
	items   []httpsfv.Item
	value   string
}

// ParseProvenance decodes the field. Like Dialog-Context it must be the canonical
// serialization, so that the prefix a hop signed is exactly reproducible.
func ParseProvenance(value string) (*Provenance, error) {
	if len(value) > MaxProvenanceSize {
		return nil, errcode.New(errcode.InvalidProvenance, "provenance is %d octets, limit %d", len(value), MaxProvenanceSize)
	}
	l, err := httpsfv.UnmarshalList([]string{value})
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidProvenance, err, "provenance is not an RFC 8941 list")
	}
	if len(l) == 0 || len(l) > MaxProvenanceRecords {
		return nil, errcode.New(errcode.InvalidProvenance, "provenance holds %d records (1 to %d)", len(l), MaxProvenanceRecords)
	}
	if canonical, err := httpsfv.Marshal(l); err != nil || canonical != value {
		return nil, errcode.New(errcode.InvalidProvenance, "provenance is not in canonical form")
	}
	p := &Provenance{value: value}
	for i, m := range l {
		it, ok := m.(httpsfv.Item)
		b, isBytes := it.Value.([]byte)
		if !ok || !isBytes || len(it.Params.Names()) > 0 {
			return nil, errcode.New(errcode.InvalidProvenance, "record %d is not a byte sequence", i)
		}
		var r HopRecord
		if _, err := netjson.DecodeOnlyKnown(b, &r); err != nil || r.WIT == "" || r.Base == "" || len(r.Sig) == 0 {
			return nil, errcode.New(errcode.InvalidProvenance, "record %d is not a provenance record", i)
		}
		p.records = append(p.records, r)
		p.items = append(p.items, it)
	}
	return p, nil
}

// Append returns the provenance a forwarder sends: the records it received, octets
// unchanged, then the record of the hop it received the request from. prev may be nil
// (the request came from the origin).
func Append(prev *Provenance, r HopRecord) (*Provenance, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	p := &Provenance{}
	if prev != nil {
		p.records = append(p.records, prev.records...)
		p.items = append(p.items, prev.items...)
	}
	if len(p.records) >= MaxProvenanceRecords {
		return nil, errcode.New(errcode.InvalidProvenance, "provenance would exceed %d records", MaxProvenanceRecords)
	}
	p.records = append(p.records, r)
	p.items = append(p.items, httpsfv.NewItem(b))
	if p.value, err = serialize(p.items); err != nil {
		return nil, err
	}
	if len(p.value) > MaxProvenanceSize {
		return nil, errcode.New(errcode.InvalidProvenance, "provenance would exceed %d octets", MaxProvenanceSize)
	}
	return p, nil
}

func serialize(items []httpsfv.Item) (string, error) {
	l := make(httpsfv.List, len(items))
	for i, it := range items {
		l[i] = it
	}
	s, err := httpsfv.Marshal(l)
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidProvenance, err, "serializing provenance")
	}
	return s, nil
}

// Value is the field value to send.
func (p *Provenance) Value() string { return p.value }

// Len is the number of records.
func (p *Provenance) Len() int { return len(p.records) }

// ProvenanceVerifier checks provenance records.
type ProvenanceVerifier struct {
	wits   *wit.Validator
	maxAge time.Duration
	now    func() time.Time
	skew   time.Duration
}

// NewProvenanceVerifier validates record WITs with wits; a record's signature may be at
// most maxAge old (0: DefaultProvenanceAge). Earlier hops' signatures have usually
// expired by the time a later hop verifies them; maxAge bounds how old a chain may be.
func NewProvenanceVerifier(wits *wit.Validator, maxAge time.Duration) *ProvenanceVerifier {
	if maxAge <= 0 {
		maxAge = DefaultProvenanceAge
	}
	return &ProvenanceVerifier{wits: wits, maxAge: maxAge, now: wits.Now, skew: wits.Skew()}
}

// Chain is a verified provenance: the workloads that signed, origin first.
type Chain struct {
	Hops []identifier.ID
}

// Verify checks every record against dc, the Dialog-Context of the request being
// verified (section 12 step 2), as the comment at the top of this file describes.
func (v *ProvenanceVerifier) Verify(ctx context.Context, p *Provenance, dc *Context) (*Chain, error) {
	chain := &Chain{}
	var lastCreated int64
	for k, r := range p.records {
		w, err := v.wits.Validate(ctx, r.WIT)
		if err != nil {
			return nil, err
		}
		if !w.Key.Verify([]byte(r.Base), r.Sig) {
			return nil, errcode.New(errcode.InvalidSignature, "provenance record %d does not verify with its WIT's key", k)
		}
		base, err := httpsig.ParseSignatureBase(r.Base)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidProvenance, err, "record %d", k)
		}
		if got, _ := base.Value(`"workload-identity-token"`); got != r.WIT {
			return nil, errcode.New(errcode.InvalidProvenance, "record %d: the signature does not cover the record's WIT", k)
		}
		if got, ok := base.Value(`"dialog-context"`); !ok || got != dc.Value() {
			return nil, errcode.New(errcode.ProvenanceDialogMismatch, "record %d was made for another Dialog-Context", k)
		}
		prefix, covered := base.Value(`"dialog-provenance"`)
		want := ""
		if k > 0 {
			if want, err = serialize(p.items[:k]); err != nil {
				return nil, err
			}
		}
		if covered != (k > 0) || prefix != want {
			return nil, errcode.New(errcode.ProvenanceBroken, "record %d did not sign the records before it: one was removed, reordered or inserted", k)
		}
		created, err := checkSignatureParams(base.SignatureParams)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidProvenance, err, "record %d", k)
		}
		now := v.now()
		if time.Unix(created, 0).After(now.Add(v.skew)) || now.Sub(time.Unix(created, 0)) > v.maxAge {
			return nil, errcode.New(errcode.TooOld, "record %d was signed at %d, outside the accepted window", k, created)
		}
		if created < lastCreated {
			return nil, errcode.New(errcode.ProvenanceBroken, "record %d was signed before the record it follows", k)
		}
		lastCreated = created
		chain.Hops = append(chain.Hops, w.Subject)
	}
	if len(chain.Hops) > 0 && !chain.Hops[0].Equal(dc.Initiator()) {
		return nil, errcode.New(errcode.InitiatorMismatch, "the origin of the provenance chain is %s, not the initiator %s", chain.Hops[0], dc.Initiator())
	}
	return chain, nil
}

// checkSignatureParams requires the WIMSE tag and returns created.
func checkSignatureParams(v string) (int64, error) {
	p, err := httpsig.ParseSignatureParams(v)
	if err != nil {
		return 0, errcode.Wrap(errcode.InvalidProvenance, err, "@signature-params")
	}
	if p.Tag != httpsig.Tag {
		return 0, errcode.New(errcode.InvalidProvenance, "record is not a WIMSE signature")
	}
	return p.Created, nil
}

// CheckContext checks that every record was made over dc, the Dialog-Context the
// provenance is to travel with (the check Verify makes, without the signatures): a
// forwarder runs it before sending, so that provenance of another dialog is refused
// where it was mixed up, before anything is sent. Verify remains the receiver's check.
func (p *Provenance) CheckContext(dc *Context) error {
	if dc == nil {
		return errcode.New(errcode.InvalidProvenance, "provenance without a Dialog-Context")
	}
	for k, r := range p.records {
		base, err := httpsig.ParseSignatureBase(r.Base)
		if err != nil {
			return errcode.Wrap(errcode.InvalidProvenance, err, "record %d", k)
		}
		if got, ok := base.Value(`"dialog-context"`); !ok || got != dc.Value() {
			return errcode.New(errcode.ProvenanceDialogMismatch, "record %d was made for another Dialog-Context", k)
		}
	}
	return nil
}
