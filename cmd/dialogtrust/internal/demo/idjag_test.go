package demo

import (
	"context"
	"strings"
	"testing"
)

// TestIssue28_DemoIDJAGPath: the in-process demo runs the ID-JAG path as its step 8
// (an ID token of domain A's identity provider, an ID-JAG from AS A, an access token
// from AS B, a Txn-Token of TTS B recording the new dialog D3), every check of it
// passed, and step 9 checked that the ID token never reached domain B.
func TestIssue28_DemoIDJAGPath(t *testing.T) {
	r, err := Execute(context.Background(), InProcess())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != steps || !strings.Contains(r.Steps[7].Title, "ID-JAG") {
		t.Fatalf("step 8 is not the ID-JAG path: %+v", r.Steps)
	}
	checks := r.StepChecks(8)
	if len(checks) < 5 {
		t.Fatalf("step 8 made %d checks: %+v", len(checks), checks)
	}
	for _, c := range checks {
		if c.Result != Passed {
			t.Errorf("step 8: %+v", c)
		}
	}
	var idTokenKept bool
	for _, c := range r.StepChecks(9) {
		idTokenKept = idTokenKept || strings.HasPrefix(c.Name, "A1's ID token (step 8) never reached domain B") && c.Result == Passed
	}
	if !idTokenKept {
		t.Error("step 9 did not check that the ID token stayed in domain A")
	}
	if !strings.Contains(r.Summary[len(r.Summary)-2], "No ID token crossed") {
		t.Errorf("the summary does not say the ID token stayed: %q", r.Summary)
	}
}
