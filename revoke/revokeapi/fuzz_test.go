package revokeapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// FuzzParseRequest: the admin API's body parser never panics, refuses with
// invalid_request or body_too_large only, and what it accepts round-trips; a
// revocation made of it is stored only when Validate passes, which then holds
// revoke's bounds.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{dialogBody, `{"kind":"workload","id":"wimse://a.example/x","reason":"r","ttl_seconds":60}`,
		`{"kind":"txn","id":"t","reason":""}`, `{"kind":"dialog","id":"D","id":"E"}`, `{}`, `[]`, `{"KIND":"dialog"}`, `{"kind":"dialog"} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := revokeapi.ParseRequest(body)
		if err != nil {
			if c := errcode.CodeOf(err); c != errcode.InvalidRequest && c != errcode.BodyTooLarge {
				t.Fatalf("code %s", c)
			}
			return
		}
		b, _ := json.Marshal(req)
		again, err := revokeapi.ParseRequest(b)
		if err != nil || again != req {
			t.Fatalf("%s does not round-trip: %v", b, err)
		}
		now := time.Unix(1_800_000_000, 0)
		r := revoke.Revocation{Kind: req.Kind, ID: req.ID, Linked: req.Linked, Reason: req.Reason, Created: now, Expires: now.Add(time.Hour)}
		if r.Validate() == nil && (len(r.ID) > revoke.MaxIDLen || len(r.Reason) > revoke.MaxReasonLen || !revoke.ValidKind(r.Kind)) {
			t.Fatalf("Validate passed %+v", r)
		}
	})
}
