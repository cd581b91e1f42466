package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// auditor records what it is told, and fails when err is set.
type auditor struct {
	err  error
	seen []*Record
}

func (a *auditor) Audit(rec *Record) error {
	a.seen = append(a.seen, rec)
	return a.err
}

// Issue 26 ("no data lost"): an issuance whose audit record could not be written is
// refused with audit_unavailable (503) and its token never sent; the handler's Done
// and the Observer see the refusal. A refusal whose record could not be written stays
// the refusal it was.
func TestEndpointAuditFailureRefusesIssuance(t *testing.T) {
	fb := &fakeGrant{name: "fallback", fail: errcode.New(errcode.UnsupportedGrantType, "nobody serves it")}
	a := &fakeGrant{name: "a", grantType: "urn:a"}
	aud := &auditor{}
	var obs records
	ep, err := NewEndpoint(EndpointConfig{Fallback: fb, Handlers: []Handler{a}, Observer: &obs, Auditor: aud})
	if err != nil {
		t.Fatal(err)
	}
	post := func(grant string) (int, string, map[string]any) {
		req := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader("grant_type="+grant))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Fake", "good")
		rec := httptest.NewRecorder()
		ep.ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, rec.Body.String(), m
	}
	if st, _, m := post("urn:a"); st != 200 || m["access_token"] != "a" || len(aud.seen) != 1 {
		t.Fatalf("audited issuance: %d %v (%d audited)", st, m, len(aud.seen))
	}
	aud.err = errors.New("disk full")
	st, body, m := post("urn:a")
	if st != http.StatusServiceUnavailable || m["code"] != string(errcode.AuditUnavailable) || m["error"] != ErrTemporarilyUnavailable {
		t.Fatalf("issuance without its record: %d %v", st, m)
	}
	if strings.Contains(body, `"access_token"`) {
		t.Fatalf("a token was sent without its audit record: %s", body)
	}
	last := obs[len(obs)-1]
	if last.Code != errcode.AuditUnavailable || last.Response != nil || errcode.KindOf(last.Err) != errcode.Incomplete {
		t.Fatalf("observed %+v", last)
	}
	if st, _, m := post("password"); st != 400 || m["code"] != string(errcode.UnsupportedGrantType) {
		t.Fatalf("refusal without its record: %d %v", st, m)
	}
	if len(aud.seen) != 3 || a.done != 2 {
		t.Fatalf("audited %d, done %d", len(aud.seen), a.done)
	}
}
