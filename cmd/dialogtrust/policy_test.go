package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testPolicy is the worked policy of docs/tts.md ("Conditions").
const testPolicy = `policy:
  rules:
    - workload: "wimse://a.example/booking/"
      name: booking by role
      subject_token_types: [access_token, txn_token]
      grant_scopes: request.scopes.filter(s, s in subject.claims.?roles.orValue([]))
      tctx:
        dept: subject.claims.?dept.orValue("none")
    - workload: "wimse://a.example/payment"
      name: payment in a dialog
      subject_token_types: [access_token, txn_token]
      when: |
        request.dlg != "" &&
        (!input.present || (input.tctx.dlg == request.dlg && size(input.call_chain) < 4))
      grant_scopes: |
        request.scopes.filter(s, s != "pay.execute" ||
          request.details.?channel.orValue("") == "web")
      details: [channel]
`

const testCases = `cases:
  - name: sales agent gets trip.read only
    requester: {workload: "wimse://a.example/booking/b1", proof: wit_httpsig}
    subject: {type: access_token, issuer: "https://idp.a.example", sub: alice,
              scope: "trip.read trip.book", claims: {roles: [trip.read], dept: sales}}
    request: {audience: a.example, scope: "trip.read trip.book", details: {dlg: D1}}
    expect: {decision: allow, rule: booking by role, scope: trip.read, tctx: {dept: sales}}
  - name: no role, no scope
    requester: {workload: "wimse://a.example/booking/b1"}
    subject: {type: access_token, issuer: "https://idp.a.example", sub: bob, scope: trip.book}
    request: {audience: a.example, scope: trip.book}
    expect: {decision: deny, code: scope_too_broad}
  - name: payment from the web front end
    requester: {workload: "wimse://a.example/payment"}
    subject: {type: access_token, issuer: "https://idp.a.example", sub: alice, scope: "pay.read pay.execute"}
    request: {audience: a.example, scope: "pay.read pay.execute", details: {dlg: D1, channel: web}}
    expect: {decision: allow, scope: "pay.read pay.execute", tctx: {dlg: D1, channel: web}}
  - name: payment without a dialog
    requester: {workload: "wimse://a.example/payment"}
    subject: {type: access_token, issuer: "https://idp.a.example", sub: alice, scope: pay.read}
    request: {audience: a.example, scope: pay.read}
    expect: {decision: deny, code: workload_not_allowed}
  - name: a replacement outside its dialog
    requester: {workload: "wimse://a.example/payment"}
    input: {txn: t1, sub: alice, scope: pay.read, call_chain: ["wimse://a.example/web"], tctx: {dlg: D1}}
    request: {audience: a.example, scope: pay.read, details: {dlg: D2}}
    expect: {decision: deny, code: workload_not_allowed}
  - name: a replacement in its dialog
    requester: {workload: "wimse://a.example/payment"}
    input: {txn: t1, sub: alice, scope: "pay.read pay.execute", call_chain: ["wimse://a.example/web"], tctx: {dlg: D1}}
    request: {audience: a.example, scope: "pay.read pay.execute", details: {dlg: D1}}
    expect: {decision: allow, rule: payment in a dialog, scope: pay.read}
  - name: nobody else
    requester: {workload: "wimse://a.example/other"}
    subject: {type: access_token, issuer: "https://idp.a.example", sub: alice, scope: pay.read}
    request: {audience: a.example, scope: pay.read}
    expect: {decision: deny, code: workload_not_allowed}
`

func writeFiles(t *testing.T, policy, cases string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	p, c := filepath.Join(dir, "tts.yaml"), filepath.Join(dir, "cases.yaml")
	if err := os.WriteFile(p, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c, []byte(cases), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, c
}

// Issue 25: dialogtrust policy test runs the worked policies of docs/tts.md on their
// cases: every case passes, exit 0.
func TestIssue25_PolicyTestPasses(t *testing.T) {
	p, c := writeFiles(t, testPolicy, testCases)
	out, errOut, code := dt(t, "", "policy", "test", p, c)
	if code != 0 || errOut != "" || !strings.HasSuffix(out, "7 passed, 0 failed\n") || strings.Contains(out, "FAIL") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// A case whose expectation the policy does not meet is FAIL, exit 1; --quiet prints
// only the failures.
func TestIssue25_PolicyTestFails(t *testing.T) {
	wrong := strings.Replace(testCases, "expect: {decision: deny, code: workload_not_allowed}\n  - name: a replacement outside",
		"expect: {decision: allow}\n  - name: a replacement outside", 1)
	wrong = strings.Replace(wrong, "scope: trip.read, tctx: {dept: sales}}", "scope: \"trip.read trip.book\", tctx: {dept: sales}}", 1)
	p, c := writeFiles(t, testPolicy, wrong)
	out, _, code := dt(t, "", "policy", "test", "--quiet", p, c)
	if code != 1 || !strings.Contains(out, "FAIL payment without a dialog: want allow, got deny") ||
		!strings.Contains(out, `FAIL sales agent gets trip.read only: want scope "trip.read trip.book", got "trip.read"`) ||
		strings.Contains(out, "PASS") || !strings.HasSuffix(out, "5 passed, 2 failed\n") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// Bad input is exit 2: a policy that does not type-check (named by file and line), a
// malformed case, a missing file.
func TestIssue25_PolicyTestBadInput(t *testing.T) {
	bad := strings.Replace(testPolicy, "request.dlg != \"\" &&", "request.dlg != 0 &&", 1)
	p, c := writeFiles(t, bad, testCases)
	_, errOut, code := dt(t, "", "policy", "test", p, c)
	if code != 2 || !strings.Contains(errOut, "tts.yaml:13") || !strings.Contains(errOut, "policy.rules[1].when") {
		t.Errorf("type error: exit %d\n%s", code, errOut)
	}
	p, c = writeFiles(t, testPolicy, "cases:\n  - name: x\n    expect: {decision: maybe}\n")
	if _, errOut, code := dt(t, "", "policy", "test", p, c); code != 2 || !strings.Contains(errOut, "allow or deny") {
		t.Errorf("malformed case: exit %d\n%s", code, errOut)
	}
	if _, _, code := dt(t, "", "policy", "test", p, filepath.Join(t.TempDir(), "none.yaml")); code != 2 {
		t.Errorf("missing file: exit %d", code)
	}
	if _, _, code := dt(t, "", "policy", "test", p); code != 2 {
		t.Errorf("one argument: exit %d", code)
	}
}
