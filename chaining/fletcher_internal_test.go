package chaining

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
)

// Txn-Token chaining profile section 6.1.2: a Txn-Token-JAG's resource is one string;
// a grant naming two is refused at AS B.
func TestFletcher6_1_2_OneResource(t *testing.T) {
	b := &JWTBearer{cfg: JWTBearerConfig{Audiences: []string{"https://as.b.example", "https://api.b.example"}}}
	if _, err := b.grantResource("https://as.b.example", "", jose.Audience{"https://api.b.example", "https://as.b.example"}); errcode.CodeOf(err) != errcode.InvalidClaim {
		t.Fatalf("two resources: %v", err)
	}
	if aud, err := b.grantResource("https://as.b.example", "", jose.Audience{"https://api.b.example"}); err != nil || aud != "https://api.b.example" {
		t.Fatalf("one resource: %q %v", aud, err)
	}
	if aud, err := b.grantResource("https://as.b.example", "", nil); err != nil || aud != "https://as.b.example" {
		t.Fatalf("none: %q %v", aud, err)
	}
}
