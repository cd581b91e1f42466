package oauth_test

import (
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// The dlg a token request may record is exactly the dlg a Dialog-Context field can
// carry (dialog-binding section 4): oauth.ValidDialog and dialog.New agree, and the
// length limits are one.
func TestValidDialogIsDialogGrammar(t *testing.T) {
	if oauth.MaxDialogLength != dialog.MaxDLGLength {
		t.Fatalf("oauth.MaxDialogLength %d, dialog.MaxDLGLength %d", oauth.MaxDialogLength, dialog.MaxDLGLength)
	}
	initiator := identifier.MustParse("wimse://a.example/agent/a1")
	cands := []string{"", "D1", "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", "urn:uuid:x", "a b", `a"b`, `a\b`, "a/b", "a,b", "a;b", "a=b", "é",
		strings.Repeat("x", dialog.MaxDLGLength), strings.Repeat("x", dialog.MaxDLGLength+1)}
	for c := 0; c < 256; c++ {
		cands = append(cands, "a"+string(rune(c))+"b", string([]byte{byte(c)}))
	}
	for _, s := range cands {
		_, err := dialog.New(s, initiator)
		if got, want := oauth.ValidDialog(s), err == nil; got != want {
			t.Errorf("%q: oauth.ValidDialog %v, dialog.New accepts %v (%v)", s, got, want, err)
		}
	}
}
