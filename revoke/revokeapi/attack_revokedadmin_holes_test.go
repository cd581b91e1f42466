package revokeapi_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/store"
)

// An administrator's key is stolen; another administrator revokes that workload (the
// issue's remedy for a workload that ran away). The revoked administrator, still
// holding a valid WIT and key, must not use the admin API: not to list, not to revoke,
// and above all not to lift its own revocation. (A design point as much as a hole: the
// API does not consult the revocations it keeps; removing the administrator from the
// configuration and restarting is today's only remedy.)
func TestAttackAPI_RevokedAdministratorCannotLiftItsOwnRevocation(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	a := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	alice, mallory := a.Workload(t, "/ops/alice", keys.ES256), a.Workload(t, "/ops/mallory", keys.ES256)
	st := revoke.NewMemory(revoke.WithClock(clock.Now))
	srvURL, srv := newAPIServer(t)
	h, err := revokeapi.New(revokeapi.Config{
		Store:        st,
		Signatures:   httpsig.NewVerifier(a.Validator(), httpsig.WithAudiences(srvURL), httpsig.WithReplay(store.NewMemory(store.WithClock(clock.Now))), httpsig.WithClock(clock.Now)),
		Admins:       []identifier.ID{alice.ID, mallory.ID},
		TrustDomains: []string{"a.example"},
		DefaultTTL:   time.Hour,
		Now:          clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	client := func(wl *testkit.Workload) *revokeapi.Client {
		return &revokeapi.Client{URL: srvURL, Signer: httpsig.NewSigner(wl.Key, wl.WIT, httpsig.WithClock(clock.Now))}
	}
	ctx := context.Background()
	if _, err := client(alice).Revoke(ctx, revokeapi.Request{Kind: revoke.Workload, ID: mallory.ID.String(), Reason: "key stolen"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := client(mallory).Lift(ctx, revoke.Workload, mallory.ID.String()); err == nil {
		t.Errorf("the revoked administrator lifted its own revocation (was live: %v)", ok)
	}
	if _, err := client(mallory).Revoke(ctx, revokeapi.Request{Kind: revoke.Workload, ID: alice.ID.String(), Reason: "mine now"}); err == nil {
		t.Error("the revoked administrator revoked the other administrator")
	}
	if _, err := client(mallory).List(ctx); err == nil {
		t.Error("the revoked administrator listed the revocations")
	}
}

// newAPIServer is an unstarted server and the API's URL on it.
func newAPIServer(t *testing.T) (string, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	return "http://" + srv.Listener.Addr().String() + revokeapi.Path, srv
}
