package demo

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is one run of the demo as data. The text output, `demo --json` and the HTML
// report of `demo --report` are three renderings of it, so they cannot disagree with
// each other or with the run: the hops are what the workloads' HTTP clients saw on the
// wire, the checks are the checks made, and the summary is computed from both.
type Report struct {
	// Title says what ran and where (in this process or against deployed services).
	Title string `json:"title"`
	// Deployed is true when the WIT issuers and TTSs were deployed elsewhere
	// (deploy/local) and only the workloads ran in this process.
	Deployed bool `json:"deployed"`
	// Domains are the two trust domains with their services' URLs.
	Domains []DomainReport `json:"domains"`
	// Participants are the parties that appear in Hops, domain A's first.
	Participants []Participant `json:"participants"`
	// Hops are who called whom, in the order of each pair's first call, with what the
	// calls carried and what came back.
	Hops []Hop `json:"hops"`
	// Steps are the numbered steps that ran; Checks the checks they made, in order.
	Steps  []Step  `json:"steps"`
	Checks []Check `json:"checks"`
	// Passed, Failed and Skipped count Checks by Result.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Error is why the run stopped before its last step ("" when it did not), and
	// ErrorCode its error code when it carries one.
	Error     string `json:"error,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	// Summary is what the run proved, in plain words, computed from Steps, Checks and
	// Hops.
	Summary []string `json:"summary"`
	// Glossary explains the terms the other fields use.
	Glossary []Term `json:"glossary"`
}

// DomainReport is one trust domain of the run.
type DomainReport struct {
	Name      string `json:"name"`
	WITIssuer string `json:"wit_issuer"`
	TTS       string `json:"tts"`
}

// Participant is one party of the run: a workload (its workload identifier) or a
// service (its URL).
type Participant struct {
	Name   string `json:"name"`
	Domain string `json:"domain"`
	// ID is the workload identifier of a workload, the base URL of a service.
	ID string `json:"id"`
	// Role says in plain words what the party does in the demo.
	Role string `json:"role"`
}

// Hop is every call from one participant to another in the run.
type Hop struct {
	From       string `json:"from"`
	To         string `json:"to"`
	FromDomain string `json:"from_domain"`
	ToDomain   string `json:"to_domain"`
	// CrossesBoundary is true when From and To are in different trust domains.
	CrossesBoundary bool `json:"crosses_boundary"`
	// Carries is what the requests carried (headers and body members seen on the
	// wire), Returns what their answers carried.
	Carries []string `json:"carries"`
	Returns []string `json:"returns"`
	// Requests counts the calls; Refused those answered with an error status or not
	// answered at all.
	Requests int `json:"requests"`
	Refused  int `json:"refused"`
	// Steps are the numbers of the steps the calls were made in.
	Steps []int `json:"steps"`
}

// Step is one numbered step of the run.
type Step struct {
	N     int    `json:"n"`
	Title string `json:"title"`
	// Claim is what the step shows, in plain words, when all its checks pass.
	Claim string `json:"claim"`
	// Info holds what the step found out (URLs, dialog identifiers, claims).
	Info []string `json:"info,omitempty"`
	// Duration is how long the step took, in nanoseconds.
	Duration time.Duration `json:"duration_ns"`
}

// Check results.
const (
	Passed  = "passed"
	Failed  = "failed"
	Skipped = "skipped"
)

// Check is one check of the run.
type Check struct {
	Step   int    `json:"step"`
	Name   string `json:"name"`
	Result string `json:"result"`
	// Detail is the error of a failed check (when it has one) or why a check was
	// skipped; Code is the failed check's error code (errcode) when its error carries
	// one.
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code,omitempty"`
}

// Term is one entry of the glossary.
type Term struct {
	Term    string `json:"term"`
	Meaning string `json:"meaning"`
}

// OK reports whether the run made checks, none failed, and it did not stop early.
func (r *Report) OK() bool { return r.Passed > 0 && r.Failed == 0 && r.Error == "" }

// Counts is the last line of the text output: "38 passed, 0 failed[, 2 skipped]".
func (r *Report) Counts() string {
	s := fmt.Sprintf("%d passed, %d failed", r.Passed, r.Failed)
	if r.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", r.Skipped)
	}
	return s
}

// StepChecks returns the checks of step n.
func (r *Report) StepChecks(n int) []Check {
	var cs []Check
	for _, c := range r.Checks {
		if c.Step == n {
			cs = append(cs, c)
		}
	}
	return cs
}

// summarize computes the Summary: for each step that ran, its claim as proved (every
// check passed), not proved (a check failed, or the step made none), or shown in part
// (some skipped); then what crossed the trust boundary, from the Hops; then the counts.
func (r *Report) summarize() {
	var s []string
	for _, st := range r.Steps {
		var pass, fail, skip int
		for _, c := range r.StepChecks(st.N) {
			switch c.Result {
			case Passed:
				pass++
			case Failed:
				fail++
			default:
				skip++
			}
		}
		switch {
		case fail > 0:
			s = append(s, fmt.Sprintf("NOT proved (%d of %d checks failed): %s", fail, pass+fail+skip, st.Claim))
		case pass == 0:
			s = append(s, "NOT proved (no check made): "+st.Claim)
		case skip > 0:
			s = append(s, fmt.Sprintf("Proved in part (%d checks skipped here): %s", skip, st.Claim))
		default:
			s = append(s, "Proved: "+st.Claim)
		}
	}
	s = append(s, r.crossingSummary()...)
	if r.Error != "" {
		s = append(s, "The run stopped early: "+r.Error)
	}
	verdict := "every check passed"
	if !r.OK() {
		verdict = "the run FAILED"
	}
	s = append(s, fmt.Sprintf("%d checks: %s; %s.", len(r.Checks), r.Counts(), verdict))
	r.Summary = s
}

// crossingSummary says what the calls across the trust boundary carried, and which
// domain-internal credentials they did not, from the Hops.
func (r *Report) crossingSummary() []string {
	var n int
	var carried []string
	for _, h := range r.Hops {
		if !h.CrossesBoundary {
			continue
		}
		n += h.Requests
		for _, c := range h.Carries {
			if !slices.Contains(carried, c) {
				carried = append(carried, c)
			}
		}
	}
	if n == 0 {
		return []string{"No call crossed the trust boundary."}
	}
	s := fmt.Sprintf("%d calls crossed from one trust domain into the other, carrying only: %s.", n, strings.Join(carried, ", "))
	if !slices.Contains(carried, LabelTxnToken) {
		s += " No Txn-Token crossed: each domain's Txn-Tokens stayed in that domain."
	}
	idTokens := slices.ContainsFunc(r.Hops, func(h Hop) bool { return slices.Contains(h.Carries, LabelIDToken) })
	if idTokens && !slices.Contains(carried, LabelIDToken) {
		s += " No ID token crossed: the ID-JAG did, for AS B only."
	}
	return []string{s}
}
