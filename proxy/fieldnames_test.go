package proxy_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// Issue 22 point 1: the fields the ingress sets, and those its receiver checks, as
// applications read them. CGI, WSGI, Django, PHP and Rack read "_" and "-" alike, and
// some servers every octet that is not a letter or digit; appName reads names that
// way (it includes the CGI reading: upper case, "-" as "_"). It is written here
// apart from the proxy's own reading, so that the two check each other.
func appName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return r
		}
		return '_'
	}, name)
}

// verifiedFields are all the Verified* fields the ingress may set.
var verifiedFields = []string{proxy.VerifiedSenderField, proxy.VerifiedProofField, proxy.VerifiedDialogField,
	proxy.VerifiedInitiatorField, proxy.VerifiedInitiatorProvedField, proxy.VerifiedEstablishedField,
	proxy.VerifiedTxnTokenClaimsField, proxy.VerifiedHandoffField, proxy.VerifiedHandoffHopField,
	proxy.VerifiedHandoffFromField, proxy.VerifiedHandoffCancelField, proxy.VerifiedProvenanceField}

// checkedFields are the credentials and the fields the receiver checks: no copy of
// them reaches the application in another spelling than the one that was checked.
var checkedFields = []string{"Workload-Identity-Token", "Txn-Token", "Dialog-Context", "Dialog-Provenance",
	"Signature", "Signature-Input", "Content-Digest", "Workload-Proof-Token"}

// protected reports whether an application reading names as appName does takes name
// for a field the ingress sets or checks.
func protected(name string) bool {
	k := appName(name)
	if strings.HasPrefix(k, "DIALOGTRUST_") || k == "X_FORWARDED_HOST" {
		return true
	}
	return slices.ContainsFunc(checkedFields, func(f string) bool { return appName(f) == k })
}

// expect is one protected field as the application must see it: exactly once, with
// value (any value when value is empty), in the spelling of name; or, when optional,
// not at all.
type expect struct {
	value    string
	optional bool
}

// seenField is a field as the application saw it.
type seenField struct{ name, value string }

// fieldsOf lists h's fields as net/http's server handed them to an application.
func fieldsOf(h http.Header) []seenField {
	var fs []seenField
	for k, vs := range h {
		for _, v := range vs {
			fs = append(fs, seenField{k, v})
		}
	}
	return fs
}

// checkSeen returns what is wrong with the protected fields the application saw
// (seen), read as appName reads them, against want, keyed by the ingress's spelling:
// a protected field not in want, one in another spelling (unless the application
// names every field as CGI does, cgiNamed), a field of want seen other than exactly
// once, or with another value. Any value containing "FORGED" is wrong.
func checkSeen(seen []seenField, want map[string]expect, cgiNamed bool) []string {
	byKey := map[string][]seenField{}
	for _, f := range seen {
		if protected(f.name) {
			byKey[appName(f.name)] = append(byKey[appName(f.name)], f)
		}
	}
	var bad []string
	for name, w := range want {
		got := byKey[appName(name)]
		delete(byKey, appName(name))
		switch {
		case len(got) == 0 && w.optional:
		case len(got) != 1:
			bad = append(bad, fmt.Sprintf("%s seen %d times: %q", name, len(got), got))
		case !cgiNamed && !strings.EqualFold(got[0].name, name):
			bad = append(bad, fmt.Sprintf("%s seen as %q", name, got[0].name))
		case w.value != "" && got[0].value != w.value || strings.Contains(got[0].value, "FORGED"):
			bad = append(bad, fmt.Sprintf("%s = %q, want %q", name, got[0].value, w.value))
		}
	}
	for _, got := range byKey {
		bad = append(bad, fmt.Sprintf("a field the ingress did not set: %q", got))
	}
	sort.Strings(bad)
	return bad
}

// spellings are the names an attacker would send for name, spelt otherwise; with
// itself too (as the hyphen spelling) unless the receiver reads it. rich adds more
// of them (the Python servers take at most 100 fields).
func spellings(name string, itself, rich bool) []string {
	under := strings.ReplaceAll(name, "-", "_")
	s := []string{under, strings.Replace(name, "-", "_", 1)}
	if rich {
		s = append(s, strings.ToLower(under), strings.ToUpper(under), strings.ReplaceAll(name, "-", "."))
		if n := strings.Count(name, "-"); n > 1 {
			s = append(s, strings.Replace(strings.ToLower(name), "-", "_", n-1))
		}
	}
	// A name without "-" has no other spelling but its case, which is itself.
	s = slices.DeleteFunc(s, func(n string) bool { return strings.EqualFold(n, name) })
	if itself {
		s = append(s, name)
	}
	return s
}

// forgeries are the fields an attacker adds: every Verified* field, X-Forwarded-Host
// and another name of the namespace in every spelling, the checked fields in every
// spelling but their own, each with a value marked FORGED; the sender twice.
func forgeries(rich bool) http.Header {
	h := http.Header{}
	add := func(names []string) {
		for _, n := range names {
			h[n] = append(h[n], "FORGED-"+n)
		}
	}
	for _, f := range append(slices.Clone(verifiedFields), "X-Forwarded-Host", "Dialogtrust-Whatever") {
		add(spellings(f, true, rich))
	}
	for _, f := range checkedFields {
		add(spellings(f, false, rich))
	}
	add(spellings(proxy.VerifiedSenderField, false, false)) // repeated
	return h
}

// verifiedWant is what the application must see of the protected fields for a
// request of a1 through the ingress at ingressURL: in dialog dc (nil: none),
// established or not, with a Txn-Token and its Content-Digest when in a dialog.
func verifiedWant(a1, ingressURL string, dc *dialog.Context, established bool) map[string]expect {
	u, _ := url.Parse(ingressURL)
	w := map[string]expect{
		proxy.VerifiedSenderField: {value: a1},
		proxy.VerifiedProofField:  {value: "httpsig"},
		// The ingress sets it today; the Host work (issue 22, rebind) may hand the
		// application the original Host instead. Never a client's copy.
		"X-Forwarded-Host": {value: u.Host, optional: true},
		"Content-Digest":   {optional: true},
	}
	if dc != nil {
		w[proxy.VerifiedDialogField] = expect{value: dc.DLG()}
		w[proxy.VerifiedInitiatorField] = expect{value: a1}
		w[proxy.VerifiedInitiatorProvedField] = expect{value: "true"}
		w[proxy.VerifiedEstablishedField] = expect{value: fmt.Sprint(established)}
		w[proxy.VerifiedTxnTokenClaimsField] = expect{}
		w[dialog.HeaderName] = expect{value: dc.Value()}
	}
	return w
}

// Issue 22 point 1, at the ingress in front of an application that reads fields as
// net/http hands them over: forged spellings of every field the ingress sets or
// checks, sent by a caller that proved itself and added after its signature (between
// the proxies, or by the caller itself: the ingress cannot tell), never reach the
// application, outside a dialog and in one; the ingress's own fields are there once,
// with the verified values. An unproved caller is refused before anything reaches it.
func TestIssue22ForgedSpellingsIngress(t *testing.T) {
	p := newPair(t, pairOptions{stateful: true})
	forged := forgeries(true)
	res, b := send(t, p.ingress.URL+"/mcp", `{}`, forged)
	if got := codeOf(res.StatusCode, b); got != errcode.MissingCredential || p.app.hits() != 0 {
		t.Fatalf("unproved: %d %s, application hits %d", res.StatusCode, b, p.app.hits())
	}
	p.tamper = func(r *http.Request) {
		for k, v := range forged {
			r.Header[k] = v
		}
	}
	// Outside any dialog: the forged dialog and initiator would make one up.
	res, b = p.call(t, "/t1", `{}`, nil)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	if bad := checkSeen(fieldsOf(p.app.last().Header), verifiedWant(p.a1.String(), p.ingress.URL, nil, false), false); len(bad) > 0 {
		t.Fatalf("outside a dialog, the application saw:\n%s", strings.Join(bad, "\n"))
	}
	res, b = p.call(t, "/t1", `{}`, start())
	dc, _ := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || dc == nil {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	if bad := checkSeen(fieldsOf(p.app.last().Header), verifiedWant(p.a1.String(), p.ingress.URL, dc, true), false); len(bad) > 0 {
		t.Fatalf("in a dialog, the application saw:\n%s", strings.Join(bad, "\n"))
	}
}

// forging adds fields to each request after its signature, on a transport of its own
// (to reach an ingress over TLS).
type forging struct {
	base   http.RoundTripper
	fields http.Header
}

func (f forging) RoundTrip(r *http.Request) (*http.Response, error) {
	for k, v := range f.fields {
		r.Header[k] = v
	}
	return f.base.RoundTrip(r)
}

// The same over HTTP/2 (lower-case names, net/http's HTTP/2 server at the ingress).
func TestIssue22ForgedSpellingsIngressHTTP2(t *testing.T) {
	p := newPair(t, pairOptions{stateful: true, ingressTLS: true, egress: func(c *proxy.EgressConfig) {
		c.Base = forging{base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.RootCAs}, ForceAttemptHTTP2: true}, fields: forgeries(true)}
	}})
	res, b := p.call(t, "/t1", `{}`, start())
	dc, _ := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || dc == nil {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	p.mu.Lock()
	proto := p.ingressProto
	p.mu.Unlock()
	if proto != "HTTP/2.0" {
		t.Fatalf("the ingress got %s", proto)
	}
	if bad := checkSeen(fieldsOf(p.app.last().Header), verifiedWant(p.a1.String(), p.ingress.URL, dc, true), false); len(bad) > 0 {
		t.Fatalf("the application saw:\n%s", strings.Join(bad, "\n"))
	}
}

// Issue 22 point 1, at the egress: the agent's copies of the proxies' fields and of
// the credentials, in any spelling, do not travel to the upstream (they would be
// signed over); an instruction of the egress in another spelling is refused
// (invalid_request) before anything is sent, rather than read as absent.
func TestIssue22AgentSpellingsEgress(t *testing.T) {
	p := newPair(t, pairOptions{})
	agentFields := forgeries(true)
	for _, f := range []string{dialog.HeaderName, proxy.StartDialogField, proxy.HandoffField, proxy.HandoffTaskField,
		proxy.HandoffCancelField, proxy.ProvenanceField} {
		for _, s := range spellings(f, false, true) {
			delete(agentFields, s)
		}
	}
	h := start()
	for k, v := range agentFields {
		h[k] = v
	}
	res, b := p.call(t, "/t1", `{}`, h)
	dc, _ := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || dc == nil {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	p.mu.Lock()
	sent := p.sent.Header.Clone()
	p.mu.Unlock()
	// What the egress made itself, once each, and nothing of the agent's.
	want := map[string]expect{"Workload-Identity-Token": {}, "Txn-Token": {}, "Signature": {}, "Signature-Input": {},
		"Content-Digest": {}, dialog.HeaderName: {}}
	// X-Forwarded-Host is the ingress's, not the egress's: the agent's may travel.
	seen := slices.DeleteFunc(fieldsOf(sent), func(f seenField) bool { return appName(f.name) == "X_FORWARDED_HOST" })
	if bad := checkSeen(seen, want, false); len(bad) > 0 {
		t.Fatalf("the egress sent:\n%s", strings.Join(bad, "\n"))
	}

	for _, c := range []struct{ name, value string }{
		{"Dialog_Context", dc.Value()}, {"Dialogtrust_Start_Dialog", "?1"}, {"dialogtrust-start_dialog", "?1"},
		{"Dialogtrust_Handoff", "?1"}, {"Dialogtrust.Handoff-Task", "t"}, {"Dialogtrust_Handoff_Cancel", "h"},
		{"Dialogtrust_Provenance", "p"},
	} {
		p.mu.Lock()
		p.sent = nil
		p.mu.Unlock()
		res, b := p.call(t, "/t1", `{}`, http.Header{c.name: {c.value}})
		p.mu.Lock()
		sent := p.sent
		p.mu.Unlock()
		if got := codeOf(res.StatusCode, b); got != errcode.InvalidRequest || res.StatusCode != 400 || sent != nil {
			t.Errorf("%s: %d %s, sent %v", c.name, res.StatusCode, b, sent != nil)
		}
	}
}

// Issue 22 point 1, trailers: a request's trailers, forged fields among them, reach
// neither the upstream from the egress nor the application from the ingress (both
// build the request they forward without them).
func TestIssue22Trailers(t *testing.T) {
	p := newPair(t, pairOptions{})
	trailer := http.Header{proxy.VerifiedSenderField: {"FORGED"}, "Dialogtrust_Verified_Dialog": {"FORGED"},
		"X-Forwarded-Host": {"FORGED"}, "X-Trailing": {"FORGED"}}
	p.tamper = func(r *http.Request) {
		if len(r.Trailer) != 0 {
			t.Errorf("the egress sent trailers %v", r.Trailer)
		}
		r.ContentLength = -1 // chunked, so that trailers follow the body
		r.Trailer = trailer.Clone()
	}
	// From the agent too.
	req, err := http.NewRequest("POST", p.egress.URL+"/t1", strings.NewReader(`{}`))
	mustOK(t, err)
	req.ContentLength = -1
	req.Trailer = trailer.Clone()
	req.Header = start()
	res, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	res.Body.Close()
	dc, _ := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || dc == nil {
		t.Fatalf("%d", res.StatusCode)
	}
	p.mu.Lock()
	sentChunked := len(p.sent.TransferEncoding) > 0 || p.sent.ContentLength == -1
	p.mu.Unlock()
	if !sentChunked {
		t.Fatal("the hop did not send trailers")
	}
	r := p.app.last()
	if len(r.Trailer) != 0 {
		t.Fatalf("the application got trailers %v", r.Trailer)
	}
	if bad := checkSeen(fieldsOf(r.Header), verifiedWant(p.a1.String(), p.ingress.URL, dc, false), false); len(bad) > 0 || r.Header.Get("X-Trailing") != "" {
		t.Fatalf("the application saw:\n%s\n%v", strings.Join(bad, "\n"), r.Header)
	}
}
