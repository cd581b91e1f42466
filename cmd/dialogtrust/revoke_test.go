package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/store"
)

// Issue 26: dialogtrust revoke names exactly one subject, and --linked only with a
// dialog; the admin URL must be absolute.
func TestIssue26RevokeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"revoke", "--admin", "http://127.0.0.1:1/admin/revocations", "--wit", "w", "--key", "k"},
		{"revoke", "--admin", "http://127.0.0.1:1/admin/revocations", "--wit", "w", "--key", "k", "--dialog", "D1", "--txn", "t"},
		{"revoke", "--admin", "http://127.0.0.1:1/admin/revocations", "--wit", "w", "--key", "k", "--workload", "wimse://a.example/x", "--linked"},
		{"revoke", "--admin", "/admin/revocations", "--wit", "w", "--key", "k", "--dialog", "D1"},
		{"revoke", "--admin", "http://127.0.0.1:1/admin/revocations", "--wit", "w", "--key", "k", "--dialog", "D1", "--ttl", "-1s"},
		{"revoke lift", "--admin", "http://127.0.0.1:1/admin/revocations", "--wit", "w", "--key", "k"},
	} {
		var out, errb strings.Builder
		if code := run(strings.Fields(strings.Join(args, " ")), strings.NewReader(""), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s%s", args, code, out.String(), errb.String())
		}
	}
}

// Issue 26: dialogtrust revoke, list and lift against a real admin API, signed with the
// operator's WIT and key; a workload that is not an administrator is refused with the
// API's code.
func TestIssue26RevokeAgainstAdminAPI(t *testing.T) {
	clock := testkit.NewClock(time.Now())
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	ops, a1 := d.Workload(t, "/ops/alice", keys.ES256), d.Workload(t, "/agent/a1", keys.ES256)
	st := revoke.NewMemory()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + revokeapi.Path
	h, err := revokeapi.New(revokeapi.Config{Store: st, Signatures: httpsig.NewVerifier(d.Validator(), httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory())),
		Admins: []identifier.ID{ops.ID}, TrustDomains: []string{"a.example"}, DefaultTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	files := func(w *testkit.Workload) (string, string) {
		k, _ := json.Marshal(w.Key)
		return testkit.WriteTemp(t, "k.jwk", string(k)), testkit.WriteTemp(t, "w.wit", w.WIT)
	}
	opsKey, opsWIT := files(ops)
	cli := func(args ...string) (int, string) {
		var out, errb strings.Builder
		code := run(args, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	code, out := cli("revoke", "--admin", url, "--wit", "@"+opsWIT, "--key", opsKey, "--dialog", "D1", "--linked", "--reason", "runaway", "--ttl", "10m")
	if code != 0 || !strings.Contains(out, `"by": "wimse://a.example/ops/alice"`) {
		t.Fatalf("revoke: %d %s", code, out)
	}
	if l, _ := st.List(t.Context()); len(l) != 1 || l[0].ID != "D1" || !l[0].Linked || l[0].Expires.Sub(l[0].Created) != 10*time.Minute {
		t.Fatalf("stored %+v", l)
	}
	if code, out := cli("revoke", "list", "--admin", url, "--wit", "@"+opsWIT, "--key", opsKey); code != 0 || !strings.Contains(out, `"id": "D1"`) {
		t.Fatalf("list: %d %s", code, out)
	}
	a1Key, a1WIT := files(a1)
	if code, out := cli("revoke", "--admin", url, "--wit", "@"+a1WIT, "--key", a1Key, "--dialog", "D2"); code == 0 || !strings.Contains(out, "not_authorized") {
		t.Fatalf("not an administrator: %d %s", code, out)
	}
	if code, out := cli("revoke", "lift", "--admin", url, "--wit", "@"+opsWIT, "--key", opsKey, "--dialog", "D1"); code != 0 || !strings.Contains(out, `"deleted": true`) {
		t.Fatalf("lift: %d %s", code, out)
	}
	if l, _ := st.List(t.Context()); len(l) != 0 {
		t.Fatalf("after lift %+v", l)
	}
}

// Issue 26: dialogtrust revoke page prints the one-time login link the admin API mints
// for the signed-in administrator, and nothing for a workload that is not one.
func TestIssue26RevokePagePrintsLoginLink(t *testing.T) {
	clock := testkit.NewClock(time.Now())
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	ops, a1 := d.Workload(t, "/ops/alice", keys.ES256), d.Workload(t, "/agent/a1", keys.ES256)
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	logins, err := console.NewLogins(base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := revokeapi.New(revokeapi.Config{Store: revoke.NewMemory(), Signatures: httpsig.NewVerifier(d.Validator(), httpsig.WithAudiences(base+revokeapi.Path), httpsig.WithReplay(store.NewMemory())),
		Admins: []identifier.ID{ops.ID}, TrustDomains: []string{"a.example"}, DefaultTTL: time.Hour, Sessions: logins})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	cli := func(w *testkit.Workload) (int, string, string) {
		k, _ := json.Marshal(w.Key)
		var out, errb strings.Builder
		code := run([]string{"revoke", "page", "--admin", base + revokeapi.Path, "--wit", w.WIT, "--key", testkit.WriteTemp(t, "k.jwk", string(k))}, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := cli(ops)
	if code != 0 || !strings.HasPrefix(out, base+"/admin/login?code=") || strings.Count(out, "\n") != 1 || !strings.Contains(errs, "works once") || !strings.Contains(errs, "press Sign in") {
		t.Fatalf("revoke page: %d %q %q", code, out, errs)
	}
	if code, out, errs := cli(a1); code == 0 || out != "" || !strings.Contains(errs, "not_authorized") {
		t.Fatalf("not an administrator: %d %q %q", code, out, errs)
	}
}
