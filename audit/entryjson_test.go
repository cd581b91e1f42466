package audit

import (
	"encoding/json"
	"testing"
)

func entryJSONEqual(t *testing.T, e Entry) {
	t.Helper()
	want, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.AppendJSON(nil); string(got) != string(want) {
		t.Fatalf("AppendJSON\n%s\nencoding/json\n%s", got, want)
	}
}

// The record's hand-written encoding is encoding/json's: verifiers and collectors may
// read either.
func TestEntryJSONMatchesReflection(t *testing.T) {
	entryJSONEqual(t, Entry{})
	entryJSONEqual(t, Entry{V: 1, Writer: "w", Seq: 7, Prev: "ab", Time: "t", Decision: Refused, Code: "c", Kind: "failed", Status: 400,
		Handler: "tts", RequestID: "r", Rule: "<rule & \"x\">", Grant: "g", Txn: "t\u2028", Dialog: "d", LinkedFrom: "l", ReqWL: "q",
		Requester: "rq", Peer: "p", SubjectSHA256: "s", IssuedSHA256: "i", Subject: "é", Scopes: []string{"a", "b"}, Audience: []string{"x"}, KID: "k",
		Hop: "h", Operation: "tools/call <x>", TargetKind: "dialog", Target: "d2", Reason: "</script>", Linked: true})
}

func FuzzEntryJSON(f *testing.F) {
	f.Add("w", "dlg", "scope", uint64(3), 200)
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, seq uint64, status int) {
		entryJSONEqual(t, Entry{Writer: s1, Dialog: s2, Rule: s3, Scopes: []string{s3, s1}, Seq: seq, Status: status, Audience: []string{s2},
			Reason: s3, Target: s1, Linked: seq%2 == 1})
	})
}

// ParseRecord reads back what AppendJSON writes, and refuses a checkpoint line, a
// member of another spelling and a member named twice.
func TestParseRecord(t *testing.T) {
	e := Entry{V: Version, Writer: "w", Seq: 2, Prev: "", Time: "t", Decision: Revoked, Handler: HandlerRevocations,
		Requester: "wimse://a.example/ops", TargetKind: "dialog", Target: "<d>", Reason: "r\"x", Linked: true}
	got, err := ParseRecord(e.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != e.Target || got.Reason != e.Reason || !got.Linked || got.Decision != Revoked || got.Seq != 2 {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{
		`{"v":1,"w":"w","checkpoint":"x","range":[]}`,
		`{"v":1,"w":"w","seq":1,"prev":"","time":"t","decision":"issued","DLG":"x"}`,
		`{"v":1,"w":"w","seq":1,"prev":"","time":"t","decision":"issued","dlg":"a","dlg":"b"}`,
		`{"v":1,"w":"w","seq":1,"prev":"","time":"t","decision":"issued","extra":1}`,
	} {
		if _, err := ParseRecord([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
