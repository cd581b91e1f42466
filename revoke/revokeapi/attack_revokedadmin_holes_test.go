package revokeapi_test

import (
	"context"
	"testing"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// An administrator's key is stolen; another administrator revokes that workload (the
// issue's remedy for a workload that ran away). The revoked administrator, still
// holding a valid WIT and key, must not use the admin API: not to list, not to revoke,
// and above all not to lift its own revocation. (A design point as much as a hole: the
// API does not consult the revocations it keeps; removing the administrator from the
// configuration and restarting is today's only remedy.)
func TestAttackAPI_RevokedAdministratorCannotLiftItsOwnRevocation(t *testing.T) {
	w := newWorldWith(t, func(c *revokeapi.Config) {
		c.Admins = append(c.Admins, identifier.MustParse("wimse://a.example/ops/mallory"))
	})
	alice, mallory := w.admin, w.domain.Workload(t, "/ops/mallory", keys.ES256)
	client := w.client
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
