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
