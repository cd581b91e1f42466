package tokenhash_test

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/tokenhash"
)

func TestOf(t *testing.T) {
	for _, in := range []string{"", "a", " padded\t", strings.Repeat("x", 1500)} {
		sum := sha256.Sum256([]byte(in))
		want := base64.RawURLEncoding.EncodeToString(sum[:])
		if got := tokenhash.Of(in); got != want {
			t.Errorf("Of(%q) = %s, want %s", in, got, want)
		}
		if got := tokenhash.Of([]byte(in)); got != want {
			t.Errorf("Of([]byte(%q)) = %s, want %s", in, got, want)
		}
	}
	// SHA-256("abc"), the example of FIPS 180-4, in base64url without padding.
	if got := tokenhash.Of("abc"); got != "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0" {
		t.Errorf("Of(abc) = %s", got)
	}
}

func TestOfAllocatesOnlyTheResult(t *testing.T) {
	tok := strings.Repeat("x", 1024)
	if n := testing.AllocsPerRun(50, func() { _ = tokenhash.Of(tok) }); n > 1 {
		t.Errorf("Of(string) allocates %v times, want 1", n)
	}
	b := []byte(tok)
	if n := testing.AllocsPerRun(50, func() { _ = tokenhash.Of(b) }); n > 1 {
		t.Errorf("Of([]byte) allocates %v times, want 1", n)
	}
}
