package wit_test

import (
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Issue 23 point 6: a fixed credential is its own Source (as go-spiffe's x509svid.SVID
// is an x509svid.Source): it gives itself, the same value every time.
func TestIssue23_6_CredentialIsItsOwnSource(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	c := &wit.Credential{WIT: "w", Key: k, Expiry: testkit.Epoch}
	var src wit.Source = c
	for range 2 {
		got, err := src.Credential(t.Context())
		if err != nil || got != c {
			t.Fatalf("got %p, %v; want the credential itself %p", got, err, c)
		}
	}
}

// Issue 23 point 6 and the Source contract (never an expired credential): the
// credential a linked dialog pins gives itself before its Expiry by the injected clock
// and is refused with expired from its Expiry on.
func TestIssue23_6_ExpiringRefusesFromExpiry(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	k, _ := keys.Generate(keys.ES256)
	c := &wit.Credential{WIT: "w", Key: k, Expiry: testkit.Epoch.Add(time.Minute)}
	src := c.Expiring(clock.Now)
	if got, err := src.Credential(t.Context()); err != nil || got != c {
		t.Fatalf("before expiry: %p, %v; want %p", got, err, c)
	}
	clock.Advance(time.Minute)
	got, err := src.Credential(t.Context())
	if got != nil {
		t.Fatal("an expired credential was handed out")
	}
	wantCode(t, err, errcode.Expired)
}
