package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// decodeStrict decodes one JSON report: no unknown member, nothing after it.
func decodeStrict(t *testing.T, b []byte) *Report {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("--json does not decode strictly: %v", err)
	}
	if dec.More() {
		t.Fatal("--json: more than one JSON document")
	}
	return &r
}

func renderAll(t *testing.T, r *Report) (text, js, page string) {
	t.Helper()
	var tb, jb, hb bytes.Buffer
	if err := WriteText(&tb, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&jb, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&hb, r); err != nil {
		t.Fatal(err)
	}
	return tb.String(), jb.String(), hb.String()
}

// TestIssue24Point9_ReportOfTheRun: one in-process run, rendered three ways. The
// hops are the calls seen on the wire (each crossing of the trust boundary carries
// no Txn-Token; the handoff offer and the access token reach B1; the grant goes to AS
// B); the text opens with the picture and the glossary and closes with the summary
// and the counts; the JSON decodes strictly into the same report; the HTML shows
// every hop and every check.
func TestIssue24Point9_ReportOfTheRun(t *testing.T) {
	r, err := Execute(context.Background(), InProcess())
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed != 0 || r.Skipped != 0 || r.Passed != len(r.Checks) || len(r.Steps) != steps {
		t.Fatalf("counts %s, %d steps", r.Counts(), len(r.Steps))
	}
	hop := func(from, to string) *Hop {
		for i := range r.Hops {
			if r.Hops[i].From == from && r.Hops[i].To == to {
				return &r.Hops[i]
			}
		}
		t.Fatalf("no hop %s → %s in %+v", from, to, r.Hops)
		return nil
	}
	for _, h := range r.Hops {
		if h.CrossesBoundary && (slicesContain(h.Carries, LabelTxnToken) || slicesContain(h.Carries, LabelIDToken)) {
			t.Errorf("a Txn-Token or an ID token crossed the boundary: %+v", h)
		}
		if h.Refused != 0 {
			t.Errorf("refused calls: %+v", h)
		}
	}
	want := map[[2]string][]string{
		{"A1", "A2"}:    {LabelWITProof, LabelTxnToken, LabelDialogContext},
		{"A2", "tool"}:  {LabelWITProof, LabelTxnToken, LabelDialogContext, LabelProvenance},
		{"A2", "AS A"}:  {LabelTxnToken},
		{"A2", "AS B"}:  {LabelJWTGrant},
		{"A2", "B1"}:    {LabelWITProof, LabelDialogContext, LabelAccessToken, LabelHandoffOffer},
		{"B1", "TTS B"}: {LabelAccessToken},
		// Step 8, the ID-JAG path (issue 28).
		{"A1", "AS A"}: {LabelWITProof, LabelIDToken},
		{"A1", "AS B"}: {LabelWITProof, LabelIDJAG},
		{"A1", "B1"}:   {LabelWITProof, LabelDialogContext, LabelAccessToken},
	}
	for k, labels := range want {
		h := hop(k[0], k[1])
		for _, l := range labels {
			if !slicesContain(h.Carries, l) {
				t.Errorf("%s → %s carries %v; want %q", k[0], k[1], h.Carries, l)
			}
		}
	}
	if h := hop("A2", "B1"); !h.CrossesBoundary || h.Requests != 2 || !slicesContain(h.Returns, LabelHandoffStatus) {
		t.Errorf("A2 → B1: %+v", h)
	}
	if h := hop("A2", "AS A"); h.CrossesBoundary || !slicesContain(h.Returns, LabelJWTGrant) {
		t.Errorf("A2 → AS A: %+v", h)
	}
	if h := hop("B1", "TTS B"); !slicesContain(h.Returns, LabelTxnToken) || h.Requests != 2 {
		t.Errorf("B1 → TTS B (D2 and D3): %+v", h)
	}
	if h := hop("A1", "AS A"); h.CrossesBoundary || !slicesContain(h.Returns, LabelIDJAG) || slicesContain(h.Carries, LabelTxnToken) {
		t.Errorf("A1 → AS A: %+v", h)
	}
	if h := hop("A1", "AS B"); !h.CrossesBoundary || !slicesContain(h.Returns, LabelAccessToken) || slicesContain(h.Carries, LabelJWTGrant) {
		t.Errorf("A1 → AS B: %+v", h)
	}
	if h := hop("A1", "B1"); !h.CrossesBoundary || h.Requests != 1 || slicesContain(h.Carries, LabelHandoffOffer) {
		t.Errorf("A1 → B1: %+v", h)
	}

	text, js, page := renderAll(t, r)
	// The text: picture first, then the glossary, the steps, the summary, the counts.
	iPicture, iTerms, iStep1, iSummary := strings.Index(text, "Who called whom"), strings.Index(text, "\nTerms:"),
		strings.Index(text, "\n[1/9]"), strings.Index(text, "\nWhat this run proved:")
	if iPicture < 0 || iPicture >= iTerms || iTerms >= iStep1 || iStep1 >= iSummary || !strings.HasSuffix(text, "\n"+r.Counts()+"\n") {
		t.Fatalf("text out of order (picture %d, terms %d, step 1 %d, summary %d):\n%s", iPicture, iTerms, iStep1, iSummary, text)
	}
	if !strings.Contains(text, "A2 ─") || !strings.Contains(text, "╂──▶ B1") || !strings.Contains(text, "╂──▶ AS B") || !strings.Contains(text, "B1 ──▶ TTS B") {
		t.Errorf("the picture lacks the crossing arrows:\n%s", text[:iTerms])
	}
	for _, term := range []string{"WIT", "WPT", "Txn-Token", "TTS", "AS A, AS B", "dialog", "linked dialog", "tctx.dlg", "handoff", "identity provider", "ID token", "ID-JAG"} {
		if !strings.Contains(text, "\n  "+term+": ") {
			t.Errorf("glossary lacks %q", term)
		}
	}
	if !strings.Contains(text, "- Proved: A2 handed work to B1") || !strings.Contains(r.Summary[len(r.Summary)-2], "No Txn-Token crossed") {
		t.Errorf("the summary does not say what was proved:\n%s", text[iSummary:])
	}
	for _, c := range r.Checks {
		if !strings.Contains(text, "   ok   "+c.Name+"\n") {
			t.Errorf("text lacks check %q", c.Name)
		}
	}

	got := decodeStrict(t, []byte(js))
	if !reflect.DeepEqual(got, r) {
		t.Errorf("the JSON is not the report:\n%s", js)
	}

	for _, c := range r.Checks {
		if !strings.Contains(page, `<li class="check passed" data-result="passed"><span class="mark">✓ passed</span> <span class="name">`+html.EscapeString(c.Name)+`</span>`) {
			t.Errorf("HTML lacks passed check %q", c.Name)
		}
	}
	for i, h := range r.Hops {
		for _, frag := range []string{`<g class="hop-arrow`, `data-hop="` + itoa(i) + `" data-from="` + html.EscapeString(h.From) + `" data-to="` + html.EscapeString(h.To) + `"`} {
			if !strings.Contains(page, frag) {
				t.Errorf("HTML lacks %q of hop %d", frag, i)
			}
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func slicesContain(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestIssue24Point9_FailedCheckShownEverywhere: a check that really fails (TTS B's log
// named, but without B1's exchange) is marked failed in the text, the JSON and the
// HTML, with its step's claim "NOT proved" in the summary, and the run fails.
func TestIssue24Point9_FailedCheckShownEverywhere(t *testing.T) {
	ctx := context.Background()
	a, b, stop, err := StartDomains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	b.TTSLog = filepath.Join(t.TempDir(), "tts-b.err")
	if err := os.WriteFile(b.TTSLog, []byte(`{"msg":"tts started"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := External(a, b)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Execute(ctx, topo)
	if err == nil || r.OK() || r.Failed != 1 {
		t.Fatalf("err %v, %s", err, r.Counts())
	}
	const name = "TTS B's log records B1's exchange (D2, the access token's hash): it is the log of what reached TTS B"
	text, js, page := renderAll(t, r)
	if !strings.Contains(text, "  FAIL  "+name) || !strings.Contains(text, "- NOT proved (1 of ") || !strings.Contains(text, "the run FAILED") {
		t.Errorf("text:\n%s", text)
	}
	var failed []Check
	for _, c := range decodeStrict(t, []byte(js)).Checks {
		if c.Result == Failed {
			failed = append(failed, c)
		}
	}
	if len(failed) != 1 || failed[0].Name != name || failed[0].Step != steps {
		t.Errorf("JSON failed checks %+v", failed)
	}
	if !strings.Contains(page, `<li class="check failed" data-result="failed"><span class="mark">✗ FAILED</span> <span class="name">`+html.EscapeString(name)+`</span>`) ||
		!strings.Contains(page, `class="verdict bad"`) {
		t.Error("the HTML does not mark the check failed")
	}
}

// TestIssue24Point9_RunStoppedEarly: a run that cannot go on (no TTS where domain B's
// should be) has the steps and checks it made, no hop it did not make, and the reason
// in all three renderings.
func TestIssue24Point9_RunStoppedEarly(t *testing.T) {
	ctx := context.Background()
	a, b, stop, err := StartDomains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	b.TTS = "http://127.0.0.1:1"
	topo, err := External(a, b)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Execute(ctx, topo)
	if err == nil || r.Error == "" || len(r.Steps) != 1 || len(r.Hops) != 0 {
		t.Fatalf("err %v; report %+v", err, r)
	}
	text, js, page := renderAll(t, r)
	if !strings.Contains(text, "The run stopped: ") || !strings.Contains(text, "- The run stopped early: ") || !strings.Contains(text, "No call crossed the trust boundary.") {
		t.Errorf("text:\n%s", text)
	}
	if decodeStrict(t, []byte(js)).Error != r.Error || !strings.Contains(page, `id="stopped"`) {
		t.Error("the JSON or the HTML lacks why the run stopped")
	}
}

// TestIssue24Point9_SummaryFromTheHops: the summary and the picture come from the
// hops, not from fixed text: a crossing hop that carries a Txn-Token is drawn across
// the boundary and takes "No Txn-Token crossed" out of the summary.
func TestIssue24Point9_SummaryFromTheHops(t *testing.T) {
	r := &Report{
		Domains: []DomainReport{{Name: "a.example"}, {Name: "b.example"}},
		Hops: []Hop{{From: "A2", To: "B1", FromDomain: "a.example", ToDomain: "b.example", CrossesBoundary: true,
			Carries: []string{LabelTxnToken}, Returns: []string{}, Requests: 1, Steps: []int{5}}},
	}
	r.summarize()
	text, _, _ := renderAll(t, r)
	if !slicesContain(r.Summary, "1 calls crossed from one trust domain into the other, carrying only: Txn-Token.") || r.OK() {
		t.Errorf("summary: %q", r.Summary)
	}
	if strings.Contains(text, "No Txn-Token crossed") || !strings.Contains(text, "carrying only:\n    Txn-Token.") {
		t.Errorf("summary:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^  A2 ─+╂──▶ B1$`).MatchString(text) || !strings.Contains(text, "→ Txn-Token") {
		t.Errorf("picture:\n%s", text)
	}
}

// TestIssue24Point9_HTMLEscapesTheRun: every string of the run lands escaped in the
// HTML report (a peer's error text is part of a check's detail), and the page loads
// nothing from anywhere: no script, no external reference, a CSP that forbids any.
func TestIssue24Point9_HTMLEscapesTheRun(t *testing.T) {
	evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	r := &Report{
		Title:        evil,
		Domains:      []DomainReport{{Name: "a.example"}, {Name: evil}},
		Participants: []Participant{{Name: evil, Domain: "a.example", ID: evil, Role: evil}, {Name: "B1", Domain: evil}},
		Hops: []Hop{{From: evil, To: "B1", FromDomain: "a.example", ToDomain: evil, CrossesBoundary: true,
			Carries: []string{evil}, Returns: []string{evil}, Requests: 1, Steps: []int{1}}},
		Steps:    []Step{{N: 1, Title: evil, Claim: evil, Info: []string{evil}}},
		Checks:   []Check{{Step: 1, Name: evil, Result: Failed, Detail: evil, Code: evil}},
		Failed:   1,
		Error:    evil,
		Glossary: []Term{{evil, evil}},
	}
	r.summarize()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Escaped text has no "<" and an escaped attribute value no '"': every "<" of the
	// page starts markup of the template, and without its quoted values a tag is the
	// template's alone.
	values := regexp.MustCompile(`"[^"]*"`)
	for _, tag := range regexp.MustCompile(`<(?:[^>"]|"[^"]*")*>`).FindAllString(page, -1) {
		tag = values.ReplaceAllString(tag, `""`)
		if regexp.MustCompile(`(?i)^<(script|img|iframe|object|embed|link|base|form)\b|\s(src|href|action|on\w+)=`).MatchString(tag) {
			t.Errorf("the HTML has the markup %q", tag)
		}
		if strings.Contains(tag, "alert") {
			t.Errorf("a string of the run became markup: %q", tag)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the evil string is not in the page, escaped")
	}
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`) {
		t.Error("no CSP that forbids loading anything")
	}
	// Nothing that loads: the only URL in markup is the SVG namespace, which is a name.
	for _, re := range []string{`(?i)@import`, `(?i)url\((?:["']?)(?:https?:|//)`} {
		if regexp.MustCompile(re).MatchString(page) {
			t.Errorf("the page references something to load: %s", re)
		}
	}
}

// TestClassifyRequest: what a hop carries is read from the header fields and the
// body on the wire; a Bearer without a token is not an access token, and a TTS's
// grant requests go to its AS.
func TestClassifyRequest(t *testing.T) {
	h := http.Header{}
	h.Set("Workload-Identity-Token", "x")
	h.Set("Txn-Token", "y")
	to, l := classifyRequest(endpoint{}, "A2", h, nil)
	if to != "A2" || !reflect.DeepEqual(l, []string{LabelTxnToken}) {
		t.Errorf("a WIT without a proof: %s %v", to, l)
	}
	h.Set("Signature", "sig1=:AA==:")
	h.Set("Authorization", "Bearer ")
	if _, l = classifyRequest(endpoint{}, "A2", h, nil); !reflect.DeepEqual(l, []string{LabelWITProof, LabelTxnToken}) {
		t.Errorf("with a signature: %v", l)
	}
	tts := endpoint{kind: kindTTS, name: "TTS B", letter: "B"}
	to, l = classifyRequest(tts, "TTS B", http.Header{}, []byte("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=x"))
	if to != "AS B" || !reflect.DeepEqual(l, []string{LabelJWTGrant}) {
		t.Errorf("jwt-bearer: %s %v", to, l)
	}
	to, l = classifyRequest(tts, "TTS B", http.Header{}, []byte("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"))
	if to != "TTS B" || !reflect.DeepEqual(l, []string{LabelAccessToken}) {
		t.Errorf("token exchange: %s %v", to, l)
	}
	if hasHandoffOffer([]byte(`{"params":{"message":{"metadata":{}}}}`)) || hasHandoffOffer([]byte(`not json`)) {
		t.Error("a message without a handoff counted as an offer")
	}
}

// TestIssue24Point9_DocsShowTheRealPicture: the picture docs/cli.md shows is the one a
// run draws, line for line (it names no port or dialog, so it is the same every run).
func TestIssue24Point9_DocsShowTheRealPicture(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(md), "\n## dialogtrust demo\n")
	if !ok {
		t.Fatal("docs/cli.md has no demo section")
	}
	_, block, ok := strings.Cut(section, "\n    Who called whom")
	if !ok {
		t.Fatal("the demo section of docs/cli.md shows no picture")
	}
	var doc []string
	for _, l := range strings.Split("    Who called whom"+block, "\n") {
		if l != "" && !strings.HasPrefix(l, "    ") {
			break
		}
		doc = append(doc, strings.TrimPrefix(l, "    "))
	}
	r, err := Execute(context.Background(), InProcess())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writePicture(&b, r)
	var run []string
	for _, l := range strings.Split(strings.TrimPrefix(b.String(), "\n"), "\n") {
		if l == "Parties:" {
			break
		}
		run = append(run, strings.TrimRight(l, " "))
	}
	for len(doc) > 0 && doc[len(doc)-1] == "" {
		doc = doc[:len(doc)-1]
	}
	for len(run) > 0 && run[len(run)-1] == "" {
		run = run[:len(run)-1]
	}
	if strings.Join(doc, "\n") != strings.Join(run, "\n") {
		t.Errorf("docs/cli.md shows\n%s\n\na run draws\n%s", strings.Join(doc, "\n"), strings.Join(run, "\n"))
	}
}
