package ttsservice

import (
	"strings"
	"testing"
)

const condBase = `development: true
listen: 127.0.0.1:0
trust_domains: [b.example]
wits:
  - {trust_domain: b.example, jwks_file: /nonexistent}
policy:
  rules:
`

// Issue 25: -check-config type-checks the conditions; a type error names the file, the
// line (and column) and the expression.
func TestIssue25_CheckConfigTypeChecksConditions(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{`    - workload: "wimse://b.example/"
      when: subject.claim.dept == "x"
`, `.yaml:9:20: policy.rules[0].when: tts issuance policy: undefined field 'claim'`},
		{`    - workload: "wimse://b.example/"
      when: "request.scopes"
`, `.yaml:9:14: policy.rules[0].when: tts issuance policy: the result is list(string) where bool is needed`},
		{`    - workload: "wimse://b.example/"
      name: sales
      when: |
        request.audience == "b.example" &&
          request.dlg == 3
`, `.yaml:12: policy.rules[0].when`},
		{`    - workload: "wimse://b.example/"
      grant_scopes: request.dlg
`, `policy.rules[0].grant_scopes`},
		{`    - workload: "wimse://b.example/"
      tctx:
        dept: subject.claims.dept +
`, `policy.rules[0].tctx.dept`},
		{`    - workload: "wimse://b.example/"
      tctx:
        dlg: '"x"'
`, `cannot be computed`},
		{`    - workload: "wimse://b.example/"
    - workload: "wimse://b.example/"
      name: later
      when: "true"
`, `never decide`},
	} {
		err := checkConfig(t, condBase+tc.rules)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.rules, err, tc.want)
		}
	}
	ok := condBase + `    - workload: "wimse://b.example/agent"
      name: sales agent
      when: subject.claims.?dept.orValue("") == "sales" && request.dlg != ""
      grant_scopes: request.scopes.filter(s, s.startsWith("trip."))
      tctx:
        dept: subject.claims.dept
    - workload: "wimse://b.example/"
`
	if err := checkConfig(t, ok); err != nil {
		t.Fatalf("a valid policy: %v", err)
	}
}

// Issue 25: the chaining servers' conditions are type-checked by -check-config too.
func TestIssue25_CheckConfigTypeChecksChainingConditions(t *testing.T) {
	bad := chainingBaseYAML + `chaining:
  peers: [{issuer: https://b}]
  as_a:
    peers:
      - issuer: https://b
        when: target.peers == "x"
`
	if err := checkConfig(t, bad); err == nil || !strings.Contains(err.Error(), ".yaml:14:21") || !strings.Contains(err.Error(), "chaining.as_a.peers[0].when") {
		t.Errorf("got %v, want the file, line 14 and the field", err)
	}
	good := chainingBaseYAML + `chaining:
  peers: [{issuer: https://b}]
  as_a:
    peers:
      - issuer: https://b
        when: input.tctx.?dlg.orValue("") != "" && target.peer == "https://b"
        grant_scopes: request.scopes.filter(s, s.startsWith("trip."))
`
	if err := checkConfig(t, good); err != nil {
		t.Errorf("a valid chaining policy: %v", err)
	}
}
