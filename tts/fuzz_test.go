package tts

import (
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// FuzzParseTokenRequest: the form parser and the JSON of request_context and
// request_details never panic, keep their bounds, and reject only with a code.
func FuzzParseTokenRequest(f *testing.F) {
	f.Add(baseForm(tdA, "trip.read", "a.b.c", TokenTypeAccessToken).Encode())
	g := baseForm(tdA, "trip.read trip.book", "{}", TokenTypeUnsignedJSON)
	g.Set("request_details", `{"dlg":"D1","n":1e400,"x":[[[[1]]]]}`)
	g.Set("request_context", `{"req_ip":"192.0.2.1"}`)
	f.Add(g.Encode())
	f.Add("scope=a&scope=b")
	f.Add("request_details=%7B%22a%22%3A%22%5C%22%7D%22%7D")
	f.Add("request_details=" + url.QueryEscape(strings.Repeat("[", 40)))
	f.Add("%zz=1")
	f.Fuzz(func(t *testing.T, body string) {
		r, err := ParseTokenRequest([]byte(body))
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("rejection without a code: %v", err)
			}
			return
		}
		if len(r.SubjectToken) > oauth.MaxSubjectTokenSize || len(r.RequestDetails) > oauth.MaxContextMembers || len(r.RequestContext) > oauth.MaxContextMembers {
			t.Fatal("a bound was not kept")
		}
		for _, s := range r.Scope {
			if s == "" || strings.ContainsAny(s, " \"\\") {
				t.Fatalf("bad scope token %q", s)
			}
		}
		if d := r.Dialog(); d != "" && !oauth.ValidDialog(d) {
			t.Fatalf("bad dialog %q", d)
		}
		_ = checkRequired(r)
	})
}
