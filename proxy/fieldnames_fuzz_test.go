package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Bounds of a fuzz input's fields.
const (
	maxFuzzFields     = 32
	maxFuzzFieldName  = 64
	maxFuzzFieldValue = 256
)

// fuzzFields reads raw as lines "name:value" into fields that can be sent: a name
// that is not an RFC 9110 token is left out (net/http sends none), as are octets no
// field value may hold.
func fuzzFields(raw string) [][2]string {
	var fs [][2]string
	for _, line := range strings.Split(raw, "\n") {
		name, value, _ := strings.Cut(line, ":")
		if len(fs) == maxFuzzFields {
			break
		}
		if name == "" || len(name) > maxFuzzFieldName || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			continue
		}
		value = strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' || r == 0x7f {
				return -1
			}
			return r
		}, value)
		if len(value) > maxFuzzFieldValue {
			value = value[:maxFuzzFieldValue]
		}
		fs = append(fs, [2]string{name, value})
	}
	return fs
}

// isTokenChar reports whether r may be in a field name (RFC 9110 section 5.6.2).
func isTokenChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r < 0x80 && strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// fuzzPair is an egress for a1 and an ingress in front of an application that
// records the fields it got, in one dialog of a1 started once; the hop between the
// proxies adds the fields set in tamper. A fuzzing worker runs its inputs one after
// the other.
type fuzzPair struct {
	a1, ingressURL, egressURL string
	dc                        *dialog.Context

	mu     sync.Mutex
	tamper [][2]string
	sent   http.Header // the egress's last request, before tampering
	seen   http.Header // the application's last request
}

func (fp *fuzzPair) RoundTrip(r *http.Request) (*http.Response, error) {
	fp.mu.Lock()
	fp.sent = r.Header.Clone()
	for _, f := range fp.tamper {
		r.Header[f[0]] = append(r.Header[f[0]], f[1])
	}
	fp.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func newFuzzPair(tb testing.TB) *fuzzPair {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	tbd, err := testbed.StartDomain(ctx, td)
	mustOK(tb, err)
	tb.Cleanup(tbd.Close)
	d := &domain{witURL: tbd.WITURL, ttsURL: tbd.TTSURL, trust: keys.NewTrust().AddTrustDomain(td, tbd.WITKeys(ctx)), ttsKeys: tbd.TTSKeys(ctx)}
	workload := func(path string) (identifier.ID, wit.Source) {
		id, err := identifier.Parse("wimse://" + td + path)
		mustOK(tb, err)
		return id, (&witissuer.Client{Endpoint: d.witURL + "/v1/wit", Audience: d.witURL, Subject: id.String()}).Source()
	}
	a1, a1src := workload("/agent/a1")
	_, t1src := workload("/tool/t1")
	fp := &fuzzPair{a1: a1.String()}

	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fp.mu.Lock()
		fp.seen = r.Header.Clone()
		fp.mu.Unlock()
		_, _ = io.WriteString(w, "{}")
	}))
	tb.Cleanup(app.Close)
	recipient := "https://t1.a.example/"
	rc, err := dialog.NewReceiver(d.receiverOptions(wit.NewValidator(d.trust, wit.WithCache(1024, time.Minute)), recipient, store.NewMemory(), t1src, true)...)
	mustOK(tb, err)
	in, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: app.URL})
	mustOK(tb, err)
	ingress := httptest.NewServer(in)
	tb.Cleanup(ingress.Close)
	fp.ingressURL = ingress.URL

	eg, err := proxy.NewEgress(proxy.EgressConfig{
		Self: a1, WIT: a1src,
		TTS:       &txntoken.Client{TokenEndpoint: d.ttsURL + tts.PathToken, WITSource: a1src, Proof: proof.WPT},
		Subject:   selfSigned(d, a1, a1src),
		Responses: httpsig.NewVerifier(wit.NewValidator(d.trust)),
		Base:      fp,
		Routes: []proxy.Route{{Prefix: "/t1", Upstream: ingress.URL + "/mcp", TxnAudience: td, TxnScope: "trip.book",
			Proof: proof.HTTPSig, RequireSignedResponse: true, Recipient: recipient}},
	})
	mustOK(tb, err)
	egress := httptest.NewServer(eg)
	tb.Cleanup(egress.Close)
	fp.egressURL = egress.URL

	res, _ := fp.send(tb, http.Header{proxy.StartDialogField: {"?1"}}, nil)
	if fp.dc, _ = dialog.FromHeader(res.Header); res.StatusCode != 200 || fp.dc == nil {
		tb.Fatalf("no dialog: %d", res.StatusCode)
	}
	return fp
}

// send sends the agent's request to the egress with the fields of h and then those
// of agent, and reads the answer.
func (fp *fuzzPair) send(tb testing.TB, h http.Header, agent [][2]string) (*http.Response, []byte) {
	req, err := http.NewRequest("POST", fp.egressURL+"/t1", strings.NewReader(`{"q":1}`))
	mustOK(tb, err)
	req.Header = h
	for _, f := range agent {
		req.Header[f[0]] = append(req.Header[f[0]], f[1])
	}
	res, err := http.DefaultClient.Do(req)
	mustOK(tb, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	mustOK(tb, err)
	return res, b
}

// FuzzIngressFieldNames: whatever fields a caller adds after its proof (hopFields,
// between the proxies) and whatever fields the local agent sends (agentFields), in
// any name and value, the application behind the ingress sees no field it reads
// (appName: without case, "_" and every other non-alphanumeric octet read as "-", as
// CGI and WSGI read "-" as "_") as one the ingress sets or checks unless the ingress
// set it, each of the ingress's own once with the verified value; and the egress sends
// none of the agent's copies of the proxies' fields or of the credentials, its own
// credentials once each.
func FuzzIngressFieldNames(f *testing.F) {
	f.Add("Dialogtrust_Verified_Sender:wimse://a.example/admin\nDialogtrust_Verified_Dialog:D-FORGED", "")
	f.Add("dialogtrust_verified_initiator:wimse://a.example/admin\nDialogtrust-Verified-Initiator_Proved:true\nX_Forwarded_Host:evil.example", "")
	f.Add("DIALOGTRUST_VERIFIED_TXN_TOKEN_CLAIMS:{}\nDialogtrust.Verified.Established:true\nDialogtrust-Verified-Sender:x", "Dialogtrust_Verified_Sender:y")
	f.Add("Txn_Token:x\nDialog_Context:dlg=D;initiator=x\nSignature_Input:x\nWorkload_Identity_Token:x\nContent_Digest:x", "")
	f.Add("", "Txn_Token:x\nWorkload.Identity.Token:x\nSignature_Input:x\nDialog_Provenance:x\nDialogtrust_Verified_Sender:x")
	f.Add("Connection:Dialog-Context\nX-Forwarded-Host:a\nx-forwarded_host:b", "Dialog_Context:dlg=D")
	f.Add("Dialogtrust-Verified-Handoff_From:x\nDialogtrust_Verified_Handoff_Cancel:h\nDialogtrust_Verified_Provenance:p", "Dialogtrust_Start_Dialog:?1")
	fp := newFuzzPair(f)
	f.Fuzz(func(t *testing.T, hopFields, agentFields string) {
		hop, agent := fuzzFields(hopFields), fuzzFields(agentFields)
		fp.mu.Lock()
		fp.tamper, fp.sent, fp.seen = hop, nil, nil
		fp.mu.Unlock()
		fp.send(t, http.Header{dialog.HeaderName: {fp.dc.Value()}}, agent)
		fp.mu.Lock()
		sent, seen := fp.sent, fp.seen
		fp.mu.Unlock()
		if sent != nil {
			// X-Forwarded-Host is the ingress's, not the egress's: the agent's may travel.
			fs := slices.DeleteFunc(fieldsOf(sent), func(f seenField) bool { return appName(f.name) == "X_FORWARDED_HOST" })
			want := map[string]expect{"Workload-Identity-Token": {}, "Txn-Token": {}, "Signature": {}, "Signature-Input": {},
				"Content-Digest": {}, dialog.HeaderName: {value: fp.dc.Value()}}
			if bad := checkSeen(fs, want, false); len(bad) > 0 {
				t.Fatalf("the egress sent:\n%s", strings.Join(bad, "\n"))
			}
		}
		if seen == nil {
			return // refused: nothing reached the application
		}
		want := verifiedWant(fp.a1, fp.ingressURL, fp.dc, false)
		// A Connection field between the proxies may name it: the ingress removes what
		// Connection names after the receiver checked it.
		want[dialog.HeaderName] = expect{value: fp.dc.Value(), optional: true}
		if bad := checkSeen(fieldsOf(seen), want, false); len(bad) > 0 {
			t.Fatalf("the application saw:\n%s", strings.Join(bad, "\n"))
		}
	})
}
