package revokeapi_test

// The attacker's suite against the JSON admin API (issue 26: "unauthenticated and
// cross-domain callers ... revocations of other domains' dialogs: nothing may get
// through"): signatures moved to another method, path or query, a body swapped under
// a signature, a WIT presented with another workload's key, two WITs, an expired WIT,
// a big unauthenticated body, every method and both paths without a credential.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// Every method on both paths, with what an outsider can bring instead of a
// credential: nothing, a bearer token (the administrator's own WIT), Basic, a cookie, a
// WIT without a signature. Refused before any octet of the body is read.
func TestAttackAPI_EveryMethodAndPathWithoutACredential(t *testing.T) {
	w := newWorld(t)
	sessions := strings.TrimSuffix(w.url, revokeapi.Path) + revokeapi.SessionsPath
	for _, u := range []string{w.url, w.url + "?kind=dialog&id=D1", sessions} {
		for _, m := range []string{"GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"} {
			for name, set := range map[string]func(*http.Request){
				"nothing":   func(*http.Request) {},
				"bearer":    func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+w.admin.WIT) },
				"basic":     func(r *http.Request) { r.SetBasicAuth("admin", "admin") },
				"cookie":    func(r *http.Request) { r.Header.Set("Cookie", "dialogtrust-session=x; __Host-dialogtrust-session=x") },
				"WIT alone": func(r *http.Request) { r.Header.Set("Workload-Identity-Token", w.admin.WIT) },
				"empty sig": func(r *http.Request) { r.Header.Set("Signature", ""); r.Header.Set("Signature-Input", "") },
				"garbage sig": func(r *http.Request) {
					r.Header.Set("Signature", "wimse=:AAAA:")
					r.Header.Set("Signature-Input", "wimse=()")
				},
			} {
				req, _ := http.NewRequest(m, u, strings.NewReader(strings.Repeat(`{"kind":"dialog","id":"D1","reason":"x"}`, 100)))
				req.Header.Set("Content-Type", "application/json")
				set(req)
				if st, _ := send(t, req); st < 400 {
					t.Errorf("%s %s with %s: %d", m, u, name, st)
				}
			}
		}
	}
	if n := w.read.Load(); n != 0 {
		t.Errorf("%d octets of unauthenticated bodies were read", n)
	}
	if len(w.live(t)) != 0 || len(w.logins.minted()) != 0 {
		t.Errorf("an unauthenticated request changed something")
	}
}

// A valid administrator's signature, moved: to another method, another query (another
// dialog lifted), another path (a login link), or kept over another body (another
// revocation); a WIT presented with another workload's key; the administrator's WIT
// beside a non-administrator's; an expired WIT. All refused, nothing changed.
func TestAttackAPI_SignatureMovedOrSwapped(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if _, err := w.client(w.admin).Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Reason: "kept"}); err != nil {
		t.Fatal(err)
	}
	sign := func(req *http.Request) {
		if _, err := httpsig.NewSigner(w.admin.Key, w.admin.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, w.url); err != nil {
			t.Fatal(err)
		}
	}
	sessions := strings.TrimSuffix(w.url, revokeapi.Path) + revokeapi.SessionsPath
	// A signed GET, sent as a DELETE.
	req, _ := http.NewRequest("GET", w.url+"?kind=dialog&id=D1", nil)
	sign(req)
	req.Method = "DELETE"
	if st, _ := send(t, req); st < 400 {
		t.Errorf("a GET's signature on a DELETE: %d", st)
	}
	// A signed DELETE of D9, sent for D1.
	req, _ = http.NewRequest("DELETE", w.url+"?kind=dialog&id=D9", nil)
	sign(req)
	req.URL.RawQuery = "kind=dialog&id=D1"
	if st, _ := send(t, req); st < 400 {
		t.Errorf("a DELETE's signature on another query: %d", st)
	}
	// A signed POST of a revocation, sent to the sessions path.
	req, _ = http.NewRequest("POST", w.url, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	sign(req)
	req2, _ := http.NewRequest("POST", sessions, strings.NewReader(`{}`))
	req2.Header = req.Header.Clone()
	if st, _ := send(t, req2); st < 400 {
		t.Errorf("a signature moved to the sessions path: %d", st)
	}
	// A signed revocation of D2, with the body of a workload's revocation.
	req, _ = http.NewRequest("POST", w.url, strings.NewReader(`{"kind":"dialog","id":"D2","reason":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	sign(req)
	req.Body = io.NopCloser(strings.NewReader(`{"kind":"workload","id":"wimse://a.example/ops/alice","reason":"x"}`))
	req.ContentLength = -1
	if st, _ := send(t, req); st < 400 {
		t.Errorf("a body swapped under a signature: %d", st)
	}
	// The administrator's WIT, signed with a non-administrator's key.
	req, _ = http.NewRequest("GET", w.url, nil)
	if _, err := httpsig.NewSigner(w.user.Key, w.admin.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, w.url); err != nil {
		t.Fatal(err)
	}
	if st, _ := send(t, req); st < 400 {
		t.Errorf("the administrator's WIT with another key: %d", st)
	}
	// Two WITs: the administrator's and a non-administrator's who signs.
	req, _ = http.NewRequest("GET", w.url, nil)
	if _, err := httpsig.NewSigner(w.user.Key, w.user.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, w.url); err != nil {
		t.Fatal(err)
	}
	req.Header["Workload-Identity-Token"] = []string{w.admin.WIT, w.user.WIT}
	if st, _ := send(t, req); st < 400 {
		t.Errorf("two WITs: %d", st)
	}
	req.Header["Workload-Identity-Token"] = []string{w.user.WIT, w.admin.WIT}
	if st, _ := send(t, req); st < 400 {
		t.Errorf("two WITs, the administrator's second: %d", st)
	}
	// An expired WIT (the test's clock, a day on).
	w.clock.Advance(24 * time.Hour)
	if _, err := w.client(w.admin).Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D3", Reason: "x"}); err == nil {
		t.Error("an expired WIT revoked")
	}
	w.clock.Advance(-24 * time.Hour)
	l := w.live(t)
	if len(l) != 1 || l[0].ID != "D1" || l[0].Reason != "kept" {
		t.Errorf("live revocations %+v", l)
	}
	if len(w.logins.minted()) != 0 {
		t.Error("a login link was minted")
	}
}
