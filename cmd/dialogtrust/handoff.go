package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/store"
)

// Signed handoffs (package handoff): offer, verify, status, status verify, digest.

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func clockAt(now int64) func() time.Time {
	if now == 0 {
		return time.Now
	}
	return func() time.Time { return time.Unix(now, 0) }
}

func parseForm(s string) (handoff.Form, error) {
	switch strings.ToLower(s) {
	case "jws", "":
		return handoff.JWS, nil
	case "cose":
		return handoff.COSE, nil
	}
	return 0, usageError{"--form is jws or cose"}
}

// readOffer reads the offer a status answers (--offer: a value, @FILE or -) and
// decodes its payload; status and status verify both start from it.
func readOffer(arg string, stdin io.Reader) (*handoff.Handoff, *handoff.Offer, error) {
	in, err := readValue(arg, stdin)
	if err != nil {
		return nil, nil, err
	}
	h, err := readHandoff(in)
	if err != nil {
		return nil, nil, err
	}
	o, err := handoff.DecodeOffer(h.Offer)
	if err != nil {
		return nil, nil, err
	}
	return h, o, nil
}

// readHandoff reads a Handoff: its JSON object, or a bare signed offer (a JWS, or
// base64url of a COSE message) taken as a Handoff without a chain.
func readHandoff(s string) (*handoff.Handoff, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		return handoff.ParseHandoffJSON([]byte(s), 0)
	}
	signed, err := handoff.ParseSignedText(s)
	if err != nil {
		return nil, err
	}
	return &handoff.Handoff{Offer: signed}, nil
}

func readTrust(path string) (*handoff.StaticTrust, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "reading the trust file")
	}
	return handoff.ParseTrust(b)
}

func argValue(fs *flag.FlagSet, stdin io.Reader, what string) (string, error) {
	switch fs.NArg() {
	case 0:
		return readValue("-", stdin)
	case 1:
		return readValue(fs.Arg(0), stdin)
	}
	return "", usageError{"one " + what + " at most"}
}

// handoffOffer signs an offer given as JSON (the members of section 2; v, type, hop,
// iat and exp may be left out and are filled in) and prints the Handoff to send.
func handoffOffer(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("handoff offer", stderr)
	keyFile := fs.String("key", "", "the delegator's private JWK file (its iss)")
	form := fs.String("form", "jws", "jws or cose")
	prevFile := fs.String("prev-handoff", "", "the Handoff this agent received (JSON file): sets prev and the chain")
	noChain := fs.Bool("no-chain", false, "with --prev-handoff, send prev without the chain")
	ttl := fs.Duration("ttl", handoff.DefaultOfferTTL, "exp - iat when exp is not given")
	now := fs.Int64("now", 0, "issue at this Unix time instead of the clock")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"key": *keyFile}); err != nil {
		return err
	}
	f, err := parseForm(*form)
	if err != nil {
		return err
	}
	in, err := argValue(fs, stdin, "offer")
	if err != nil {
		return err
	}
	key, err := loadPrivateKey(*keyFile, stdin)
	if err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(in), &members); err != nil || members == nil {
		return errcode.New(errcode.InvalidRequest, "the offer is not a JSON object")
	}
	clock := clockAt(*now)
	iat := clock().Unix()
	defaults := map[string]any{"v": handoff.Version, "type": "offer", "hop": handoff.NewHopID(), "iat": iat}
	if _, ok := members["iat"]; ok {
		_ = json.Unmarshal(members["iat"], &iat)
	}
	defaults["exp"] = iat + int64(*ttl/time.Second)
	for k, v := range defaults {
		if _, ok := members[k]; !ok {
			members[k], _ = json.Marshal(v)
		}
	}
	b, _ := json.Marshal(members)
	o, err := handoff.ParseOfferJSON(b)
	if err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "offer")
	}
	req := handoff.OfferRequest{Offer: *o, OmitChain: *noChain}
	if *prevFile != "" {
		pb, err := os.ReadFile(*prevFile)
		if err != nil {
			return errcode.Wrap(errcode.InvalidRequest, err, "reading --prev-handoff")
		}
		if req.From, err = handoff.ParseHandoffJSON(pb, 0); err != nil {
			return err
		}
		if o.Prev != nil && !o.Prev.Equal(req.From.Offer.Digest()) {
			return errcode.New(errcode.InvalidRequest, "prev in the offer is not the digest of --prev-handoff's offer")
		}
		req.Offer.Prev = nil
	}
	d, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: o.Iss, Key: key, Trust: handoff.NewStaticTrust(), Form: f, Now: clock, TTL: *ttl})
	if err != nil {
		return err
	}
	h, err := d.Offer(context.Background(), req)
	if err != nil {
		return err
	}
	out, err := h.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = stdout.Write(append(out, '\n'))
	return err
}

type chainReport struct {
	Carried      bool   `json:"carried"`
	Length       int    `json:"length"`
	Full         bool   `json:"full"`
	Partial      bool   `json:"partial,omitempty"`
	Unverifiable bool   `json:"unverifiable,omitempty"`
	Origin       string `json:"origin,omitempty"`
}

type verifyReport struct {
	Decision string         `json:"decision"`
	Reason   handoff.Reason `json:"reason,omitempty"`
	Code     errcode.Code   `json:"code,omitempty"`
	Iss      string         `json:"iss,omitempty"`
	Hop      string         `json:"hop,omitempty"`
	Chain    *chainReport   `json:"chain,omitempty"`
}

// handoffVerify receives a Handoff as the delegate --self would (section 5.1, with
// fresh in-memory records) and prints the decision.
func handoffVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("handoff verify", stderr)
	trustFile := fs.String("trust", "", `trust file: {"AgentId": {"keys": [JWK, ...]}, ...}`)
	self := fs.String("self", "", "this agent's AgentId (the expected aud)")
	dialog := fs.String("dialog", "", "the dialog identifier of the carrying message")
	now := fs.Int64("now", 0, "verify at this Unix time instead of the clock")
	skew := fs.Duration("skew", handoff.DefaultSkew, "allowed clock skew")
	maxLifetime := fs.Duration("max-lifetime", handoff.DefaultMaxLifetime, "maximum exp - iat")
	maxChain := fs.Int("max-chain", handoff.DefaultMaxChainLength, "maximum chain length")
	full := fs.Bool("require-full-chain", false, "reject a partial, unverifiable or absent chain (reason policy)")
	var origins, reentry repeated
	fs.Var(&origins, "trusted-origin", "require a full chain starting at this AgentId (repeatable)")
	fs.Var(&reentry, "allow-reentry", "admit this AgentId appearing again in the chain (repeatable)")
	credential := fs.String("credential", "", "the credential that arrived with the hop (value or @FILE), checked against grant")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"trust": *trustFile, "self": *self}); err != nil {
		return err
	}
	in, err := argValue(fs, stdin, "handoff")
	if err != nil {
		return err
	}
	h, err := readHandoff(in)
	if err != nil {
		return err
	}
	trust, err := readTrust(*trustFile)
	if err != nil {
		return err
	}
	policy := handoff.ChainPolicy{MaxLength: *maxChain, RequireFull: *full, TrustedOrigins: origins}
	if len(reentry) > 0 {
		policy.AllowReentry = func(a string) bool {
			for _, r := range reentry {
				if r == a {
					return true
				}
			}
			return false
		}
	}
	// A one-shot check keeps no records across runs, so it has none to lose: section
	// 8.4 does not apply (time.Time{}: nothing was lost).
	r := handoff.NewReceiver(*self, trust, store.NewMemoryRecords(), handoff.WithClock(clockAt(*now)),
		handoff.WithSkew(*skew), handoff.WithMaxLifetime(*maxLifetime), handoff.WithChainPolicy(policy),
		handoff.WithRecordsLostAt(time.Time{}))
	inb := handoff.Inbound{Handoff: h, Dialog: *dialog}
	if *credential != "" {
		c, err := readValue(*credential, stdin)
		if err != nil {
			return err
		}
		inb.Credential = []byte(c)
	}
	d, rerr := r.Receive(context.Background(), inb)
	rep := verifyReport{Decision: string(d.Outcome)}
	if d.Outcome == handoff.OutcomeAccepted {
		rep.Iss, rep.Hop = d.Offer.Iss, d.Offer.Hop
		if c := d.Chain; c != nil {
			rep.Chain = &chainReport{Carried: c.Carried, Length: c.Length, Full: c.Full(), Partial: c.Partial,
				Unverifiable: c.Unverifiable, Origin: c.Origin}
		}
	} else {
		rep.Decision = string(handoff.OutcomeRejected)
		rep.Reason = d.Reason
		if d.Reason == "" {
			rep.Code = errcode.CodeOf(rerr)
		}
	}
	if err := writeJSON(stdout, rep); err != nil {
		return err
	}
	return rerr
}

// handoffStatus signs a status for an offer: the delegate's (accepted, rejected,
// completed, failed) or the delegator's canceled.
func handoffStatus(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("handoff status", stderr)
	keyFile := fs.String("key", "", "the sender's private JWK file")
	offerArg := fs.String("offer", "", "the offer answered: a Handoff JSON, a signed offer, or @FILE")
	state := fs.String("state", "", "accepted, rejected, completed, failed or canceled")
	reason := fs.String("reason", "", "reason value (section 2)")
	detail := fs.String("detail", "", "free text for people")
	now := fs.Int64("now", 0, "issue at this Unix time instead of the clock")
	var refs repeated
	fs.Var(&refs, "ref", "FILE: add a digest reference to the file's octets (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"key": *keyFile, "offer": *offerArg, "state": *state}); err != nil {
		return err
	}
	key, err := loadPrivateKey(*keyFile, stdin)
	if err != nil {
		return err
	}
	h, o, err := readOffer(*offerArg, stdin)
	if err != nil {
		return err
	}
	st := &handoff.Status{Hop: o.Hop, Offer: h.Offer.Digest(), Iss: o.Aud, Aud: o.Iss, Iat: clockAt(*now)().Unix(), State: handoff.State(*state)}
	if st.State == handoff.StateCanceled {
		st.Iss, st.Aud = o.Iss, o.Aud
	}
	if !st.State.Sendable() {
		return usageError{"--state is accepted, rejected, completed, failed or canceled"}
	}
	if *reason != "" {
		r := handoff.Reason(*reason)
		st.Reason = &r
	}
	if *detail != "" {
		st.Detail = detail
	}
	for _, f := range refs {
		b, err := os.ReadFile(f)
		if err != nil {
			return errcode.Wrap(errcode.InvalidRequest, err, "reading --ref")
		}
		st.Refs = append(st.Refs, handoff.DigestRef(b, ""))
	}
	s, err := handoff.SignStatus(key, h.Offer.Form, st)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, s.Text()+"\n")
	return err
}

// handoffStatusVerify checks a status against the offer it answers (section 5.6) and
// prints it.
func handoffStatusVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("handoff status verify", stderr)
	trustFile := fs.String("trust", "", "trust file (as for handoff verify)")
	offerArg := fs.String("offer", "", "the offer answered: a Handoff JSON, a signed offer, or @FILE")
	self := fs.String("self", "", "this agent's AgentId (the expected aud); default: the other party of the offer")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"trust": *trustFile, "offer": *offerArg}); err != nil {
		return err
	}
	trust, err := readTrust(*trustFile)
	if err != nil {
		return err
	}
	h, o, err := readOffer(*offerArg, stdin)
	if err != nil {
		return err
	}
	text, err := argValue(fs, stdin, "status")
	if err != nil {
		return err
	}
	s, err := handoff.ParseSignedText(strings.TrimSpace(text))
	if err != nil {
		return err
	}
	vs, err := handoff.VerifyStatusSignature(context.Background(), trust, s, 0)
	if err != nil {
		return err
	}
	if err := handoff.CheckStatus(vs, o, h.Offer.Digest(), *self); err != nil {
		return err
	}
	b, err := vs.Status.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = stdout.Write(append(b, '\n'))
	return err
}

// handoffDigest prints a handoff digest (section 3.3): of a signed handoff (JWS or
// base64url COSE), of a Handoff's offer, or with --raw of the input octets exactly as
// given (a credential for grant, an object for a reference).
func handoffDigest(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("handoff digest", stderr)
	raw := fs.Bool("raw", false, "digest the octets exactly as given (no trimming)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageError{"one input at most"}
	}
	arg := "-"
	if fs.NArg() == 1 {
		arg = fs.Arg(0)
	}
	if *raw {
		var b []byte
		var err error
		switch {
		case arg == "-":
			b, err = io.ReadAll(io.LimitReader(stdin, 16<<20))
		case strings.HasPrefix(arg, "@"):
			b, err = os.ReadFile(arg[1:])
		default:
			b = []byte(arg)
		}
		if err != nil {
			return errcode.Wrap(errcode.InvalidRequest, err, "reading input")
		}
		return writeJSON(stdout, digestJSON(handoff.SHA256Digest(b)))
	}
	in, err := readValue(arg, stdin)
	if err != nil {
		return err
	}
	h, err := readHandoff(in)
	if err != nil {
		return err
	}
	return writeJSON(stdout, digestJSON(h.Offer.Digest()))
}

func digestJSON(d handoff.Digest) map[string]string {
	return map[string]string{"alg": d.Alg, "val": d.Val}
}
