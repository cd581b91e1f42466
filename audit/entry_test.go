package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

type memSink struct {
	buf bytes.Buffer
	err error
}

func (m *memSink) Write(l []byte) error {
	if m.err != nil {
		return m.err
	}
	m.buf.Write(l)
	return nil
}

// Issue 26: the trail holds the SHA-256 of the subject and of the issued token, never
// a whole token; and what placed the decision (txn, dlg, req_wl, rule, scopes, aud).
func TestAuditRecordHoldsHashesNeverTokens(t *testing.T) {
	subject, issued := "eyJhbGciOiJFUzI1NiJ9.c3ViamVjdA.c2ln", "eyJhbGciOiJFUzI1NiJ9.aXNzdWVk.c2ln"
	exp := jose.NumericDate(2000000000)
	claims := &txntoken.Claims{Txn: "t-1", Sub: "user-1", Scope: "read write", ReqWL: "wimse://a.example/agent", Aud: jose.Audience{"a.example"},
		Exp: &exp, Tctx: map[string]any{txntoken.DialogMember: "dlg-7"}}
	rec := &oauth.Record{Handler: "tts", Rule: "agents", Grant: "token_exchange", Requester: "wimse://a.example/agent", Status: 200,
		Request: &oauth.TokenRequest{SubjectToken: subject}, Detail: claims, KID: "k1"}
	rec.Token.AccessToken = issued
	refused := &oauth.Record{Handler: "tts", Status: 400, Err: errcode.New(errcode.WorkloadNotAllowed, "no"), Code: errcode.WorkloadNotAllowed,
		Request: &oauth.TokenRequest{SubjectToken: subject, Audience: "b.example", Scope: []string{"read"}}}
	sink := &memSink{}
	l, err := New(sink, fixedKey{testkit.NewKey(t, "ES256")}, WithClock(func() time.Time { return time.Unix(1e9, 0) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*oauth.Record{rec, refused} {
		if err := l.Audit(r); err != nil {
			t.Fatal(err)
		}
	}
	out := sink.buf.Bytes()
	for _, tok := range []string{subject, issued, "c3ViamVjdA", "aXNzdWVk"} {
		if bytes.Contains(out, []byte(tok)) {
			t.Fatalf("the trail holds a token (%s): %s", tok, out)
		}
	}
	var got [2]Entry
	for i, line := range bytes.SplitN(out, []byte("\n"), 3)[:2] {
		if err := json.Unmarshal(line, &got[i]); err != nil {
			t.Fatal(err)
		}
	}
	is, rf := got[0], got[1]
	if is.Decision != Issued || is.SubjectSHA256 != tokenhash.Of(subject) || is.IssuedSHA256 != tokenhash.Of(issued) || is.Txn != "t-1" ||
		is.Dialog != "dlg-7" || is.ReqWL != claims.ReqWL || is.Rule != "agents" || len(is.Scopes) != 2 || is.Audience[0] != "a.example" ||
		is.Seq != 1 || is.Time != "2001-09-09T01:46:40Z" {
		t.Fatalf("issued entry %+v", is)
	}
	if rf.Decision != Refused || rf.Code != string(errcode.WorkloadNotAllowed) || rf.Kind != "failed" || rf.IssuedSHA256 != "" ||
		rf.SubjectSHA256 != tokenhash.Of(subject) || rf.Audience[0] != "b.example" || rf.Seq != 2 || rf.Prev == "" {
		t.Fatalf("refused entry %+v", rf)
	}
}

// A record the sink did not take is an error (the endpoint refuses the issuance), and
// the chain stays where it was: the next record written takes the number.
func TestAuditSinkFailureIsReported(t *testing.T) {
	sink := &memSink{err: errors.New("disk full")}
	l, err := New(sink, fixedKey{testkit.NewKey(t, "ES256")})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(&Entry{Decision: Issued}); err == nil {
		t.Fatal("a failed write was not reported")
	}
	sink.err = nil
	e := Entry{Decision: Issued}
	if err := l.Append(&e); err != nil || e.Seq != 1 {
		t.Fatalf("after a failure: seq %d, %v", e.Seq, err)
	}
}

// A refusal's record holds what an unauthenticated caller chose (dlg, scope, audience,
// resource); the token request's bounds keep it well under MaxLine, so no caller can
// make a line the verifier must call malformed.
func TestAuditRecordOfLargestRequestFitsALine(t *testing.T) {
	big := func(n int) string { return strings.Repeat("<", n) } // six octets each once escaped
	var scopes []string
	for i := 0; i < oauth.MaxScopeSize/2; i++ {
		scopes = append(scopes, "\u2028")
	}
	rec := &oauth.Record{Handler: big(100), Status: 400, Err: errcode.New(errcode.InvalidRequest, "x"), Code: errcode.InvalidRequest,
		Request: &oauth.TokenRequest{SubjectToken: big(oauth.MaxSubjectTokenSize), Audience: big(oauth.MaxParamSize), Resource: big(oauth.MaxParamSize), Scope: scopes}}
	e := FromRecord(rec, time.Now())
	e.Dialog = big(oauth.MaxDialogLength)
	if n := len(e.AppendJSON(nil)); n > MaxLine/2 {
		t.Fatalf("a record of %d octets", n)
	}
}
