package ttsservice

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"strings"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// PolicyCases is a file of `dialogtrust policy test` (docs/tts.md, "Testing a
// policy"): requests and the decisions expected of them.
type PolicyCases struct {
	Cases []PolicyCase `yaml:"cases"`
}

// PolicyCase is one request: who asks, with which subject token (as it validated),
// what, and what the policy must decide.
type PolicyCase struct {
	Name      string `yaml:"name"`
	Requester struct {
		Workload string `yaml:"workload"`
		Proof    string `yaml:"proof"`
	} `yaml:"requester"`
	Subject struct {
		Type   string         `yaml:"type"`
		Issuer string         `yaml:"issuer"`
		Sub    string         `yaml:"sub"`
		Scope  *string        `yaml:"scope"` // absent: the token names none
		Claims map[string]any `yaml:"claims"`
	} `yaml:"subject"`
	Request struct {
		Audience string         `yaml:"audience"`
		Scope    string         `yaml:"scope"`
		Details  map[string]any `yaml:"details"`
		Context  map[string]any `yaml:"context"`
	} `yaml:"request"`
	// Input, when present, makes the case a replacement of this Txn-Token.
	Input *struct {
		Txn        string         `yaml:"txn"`
		Sub        string         `yaml:"sub"`
		Aud        string         `yaml:"aud"`
		Scope      string         `yaml:"scope"`
		CallChain  []string       `yaml:"call_chain"`
		Extensions int            `yaml:"extensions"`
		Tctx       map[string]any `yaml:"tctx"`
		Rctx       map[string]any `yaml:"rctx"`
	} `yaml:"input"`
	Expect struct {
		Decision string         `yaml:"decision"` // allow or deny
		Code     string         `yaml:"code"`
		Rule     string         `yaml:"rule"`
		Scope    *string        `yaml:"scope"`
		Tctx     map[string]any `yaml:"tctx"`
	} `yaml:"expect"`
}

// BadInput is a policy or cases file that cannot be read or checked
// (`dialogtrust policy test` exits 2).
type BadInput struct{ Err error }

func (b BadInput) Error() string { return b.Err.Error() }
func (b BadInput) Unwrap() error { return b.Err }

// TestPolicy runs the policy of the TTS configuration file policyFile (a whole
// configuration, or one with only its policy section) on every case of casesFile,
// printing PASS or FAIL per case to out; it returns the number of failures. Nothing is
// verified or signed: each case says what its subject token validated to.
func TestPolicy(policyFile, casesFile string, out io.Writer) (int, error) {
	raw, err := os.ReadFile(policyFile)
	if err != nil {
		return 0, BadInput{err}
	}
	var cfg Config
	if err := kit.ParseYAML(raw, &cfg); err != nil {
		return 0, BadInput{fmt.Errorf("%s: %w", policyFile, err)}
	}
	pol, err := buildPolicy(cfg.Policy, policyFile)
	if err == nil {
		err = pol.Compile()
	}
	if err != nil {
		return 0, BadInput{err}
	}
	raw, err = os.ReadFile(casesFile)
	if err != nil {
		return 0, BadInput{err}
	}
	var cases PolicyCases
	if err := kit.ParseYAML(raw, &cases); err != nil {
		return 0, BadInput{fmt.Errorf("%s: %w", casesFile, err)}
	}
	if len(cases.Cases) == 0 {
		return 0, BadInput{fmt.Errorf("%s: no cases", casesFile)}
	}
	failed := 0
	for i, c := range cases.Cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("cases[%d]", i)
		}
		got, err := runCase(&pol, c)
		if err != nil {
			return failed, BadInput{fmt.Errorf("%s: %s: %w", casesFile, name, err)}
		}
		if why := mismatch(c, got); why != "" {
			failed++
			fmt.Fprintf(out, "FAIL %s: %s\n", name, why)
			continue
		}
		fmt.Fprintf(out, "PASS %s\n", name)
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", len(cases.Cases)-failed, failed)
	return failed, nil
}

func runCase(pol *tts.Policy, c PolicyCase) (tts.Outcome, error) {
	if c.Expect.Decision != "allow" && c.Expect.Decision != "deny" {
		return tts.Outcome{}, fmt.Errorf("expect.decision must be allow or deny")
	}
	id, err := identifier.Parse(c.Requester.Workload)
	if err != nil {
		return tts.Outcome{}, fmt.Errorf("requester.workload: %w", err)
	}
	proof := c.Requester.Proof
	if proof == "" {
		proof = oauth.MethodHTTPSig
	}
	typ := tts.TokenTypeTxnToken
	if c.Input == nil {
		if typ, err = tokenType(c.Subject.Type); err != nil {
			return tts.Outcome{}, fmt.Errorf("subject.type: %w", err)
		}
	}
	// The request as the token endpoint parses it.
	form := url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {tts.TokenTypeTxnToken},
		"audience": {c.Request.Audience}, "subject_token": {"policy-test"}, "subject_token_type": {typ}}
	if c.Request.Scope != "" {
		form.Set("scope", c.Request.Scope)
	}
	for name, m := range map[string]map[string]any{"request_details": c.Request.Details, "request_context": c.Request.Context} {
		if m != nil {
			b, err := json.Marshal(m)
			if err != nil {
				return tts.Outcome{}, fmt.Errorf("request: %w", err)
			}
			form.Set(name, string(b))
		}
	}
	tr, err := oauth.ParseTokenRequest([]byte(form.Encode()))
	if err == nil {
		err = tr.DecodeContext()
	}
	if err != nil {
		return tts.Outcome{Err: err}, nil // refused before the policy
	}
	var subj *tts.Subject
	if in := c.Input; in != nil {
		aud := in.Aud
		if aud == "" {
			aud = c.Request.Audience
		}
		iat, exp := jose.NumericDate(0), jose.NumericDate(0)
		claims := &txntoken.Claims{Iat: &iat, Exp: &exp, Aud: jose.Audience{aud}, Txn: in.Txn, Sub: in.Sub, Scope: in.Scope, Ext: in.Extensions, Tctx: in.Tctx, Rctx: in.Rctx}
		if n := len(in.CallChain); n > 0 {
			claims.ReqWL = in.CallChain[n-1]
			if n > 1 {
				claims.ReqChain = in.CallChain
			}
		}
		subj = tts.TestSubject(typ, "", in.Sub, claims.ScopeList(), true, nil, claims)
	} else {
		var scopes []string
		if c.Subject.Scope != nil {
			if scopes, err = oauth.ParseScope(*c.Subject.Scope); err != nil {
				return tts.Outcome{}, fmt.Errorf("subject.scope: %w", err)
			}
		}
		claims := map[string]any{}
		for k, v := range c.Subject.Claims {
			claims[k] = v
		}
		claims["sub"], claims["iss"] = c.Subject.Sub, c.Subject.Issuer
		b, err := json.Marshal(claims)
		if err != nil {
			return tts.Outcome{}, fmt.Errorf("subject.claims: %w", err)
		}
		subj = tts.TestSubject(typ, c.Subject.Issuer, c.Subject.Sub, scopes, c.Subject.Scope != nil, b, nil)
	}
	return pol.Decide(context.Background(), tr, &oauth.Client{ID: id, Method: proof}, subj), nil
}

// mismatch says how got differs from what c expects ("" when it does not).
func mismatch(c PolicyCase, got tts.Outcome) string {
	decision, detail := "allow", ""
	if got.Err != nil {
		decision, detail = "deny", fmt.Sprintf(" (%s)", got.Err)
	}
	var why []string
	if decision != c.Expect.Decision {
		why = append(why, fmt.Sprintf("want %s, got %s%s", c.Expect.Decision, decision, detail))
	}
	if c.Expect.Code != "" && string(errcode.CodeOf(got.Err)) != c.Expect.Code {
		why = append(why, fmt.Sprintf("want code %s, got %q", c.Expect.Code, errcode.CodeOf(got.Err)))
	}
	if c.Expect.Rule != "" && got.Rule != c.Expect.Rule {
		why = append(why, fmt.Sprintf("want rule %q, got %q", c.Expect.Rule, got.Rule))
	}
	if c.Expect.Scope != nil && strings.Join(got.Scopes, " ") != *c.Expect.Scope {
		why = append(why, fmt.Sprintf("want scope %q, got %q", *c.Expect.Scope, strings.Join(got.Scopes, " ")))
	}
	for k, want := range c.Expect.Tctx {
		if !sameJSON(got.Tctx[k], want) {
			why = append(why, fmt.Sprintf("want tctx.%s %v, got %v", k, want, got.Tctx[k]))
		}
	}
	return strings.Join(why, "; ")
}

// sameJSON compares two values as JSON.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	_ = json.Unmarshal(x, &u)
	_ = json.Unmarshal(y, &v)
	return reflect.DeepEqual(u, v)
}
