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
		Requester: "rq", Peer: "p", SubjectSHA256: "s", IssuedSHA256: "i", Subject: "é", Scopes: []string{"a", "b"}, Audience: []string{"x"}, KID: "k"})
}

func FuzzEntryJSON(f *testing.F) {
	f.Add("w", "dlg", "scope", uint64(3), 200)
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, seq uint64, status int) {
		entryJSONEqual(t, Entry{Writer: s1, Dialog: s2, Rule: s3, Scopes: []string{s3, s1}, Seq: seq, Status: status, Audience: []string{s2}})
	})
}
