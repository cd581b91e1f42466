package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// answerSignatures is the egress's transport to the ingress: it keeps the status and
// the Signature-Input of each answer, in order, and passes the body on as it comes.
type answerSignatures struct {
	mu     sync.Mutex
	seen   []string
	status int
}

func (a *answerSignatures) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status = 0 // no answer
	if err == nil {
		a.seen = append(a.seen, res.Header.Get("Signature-Input"))
		a.status = res.StatusCode
	}
	return res, err
}

func (a *answerSignatures) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[len(a.seen)-1]
}

// http-signature-07 section 3.5 through the proxies, Egress -> Ingress -> application:
// an ingress whose receiver signs responses with dialog.WithStreamingUnsigned passes the
// application's event stream to a request that did not ask for a signed response as it
// comes (the agent reads event 1 while the application waits for exactly that before
// it ends the stream), unsigned, with the Dialog-Context echoed; a JSON reply through
// the same pair is still signed over its digest, read whole by the ingress as before:
// one that breaks off is answered with a problem document, not cut off.
func TestWIMSESig3_5_SigningIngressStreamsAnUnaskedEventStream(t *testing.T) {
	read1 := make(chan struct{})
	answers := &answerSignatures{}
	p := newPair(t, pairOptions{method: proof.HTTPSig, unsignedOK: true,
		receiver: func(identifier.ID) []dialog.ReceiverOption {
			return []dialog.ReceiverOption{dialog.WithStreamingUnsigned()}
		},
		egress: func(c *proxy.EgressConfig) { c.Base = answers },
		app: func(w http.ResponseWriter, r *http.Request, body []byte) {
			if strings.Contains(string(body), `"broken"`) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "100")
				_, _ = io.WriteString(w, `{"jsonrpc":`)
				return
			}
			if !strings.Contains(string(body), `"tools/call"`) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			eventThenEvent(w, r, mcpProgress, read1, mcpSSEReply)
		}})
	c := agentClient(t)
	res, br, _ := open(t, c, "POST", p.egress.URL+"/t1", toolsCall, merge(eventStreamFields(), start()))
	if res.StatusCode != 200 || res.ContentLength != -1 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d length %d %v", res.StatusCode, res.ContentLength, res.Header)
	}
	if dc, err := dialog.FromHeader(res.Header); err != nil || dc == nil || !dc.Initiator().Equal(p.a1) {
		t.Fatalf("no Dialog-Context of a1 in %v (%v)", res.Header, err)
	}
	if got := testkit.ReadEvent(t, br); got != mcpProgress {
		t.Fatalf("event 1: %q", got)
	}
	close(read1)
	if rest, err := io.ReadAll(br); err != nil || string(rest) != mcpSSEReply {
		t.Fatalf("the rest of the stream: %q (%v)", rest, err)
	}
	if si := answers.last(); si != "" {
		t.Fatalf("the ingress signed the stream it passed: %q", si)
	}

	res, br, _ = open(t, c, "POST", p.egress.URL+"/t1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, merge(eventStreamFields(), start()))
	body, err := io.ReadAll(br)
	if err != nil || res.StatusCode != 200 || string(body) != `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}` {
		t.Fatalf("JSON: %d %q (%v)", res.StatusCode, body, err)
	}
	if si := answers.last(); !strings.Contains(si, `"content-digest"`) {
		t.Fatalf("the ingress did not sign the JSON reply: %q", si)
	}

	res, br, _ = open(t, c, "POST", p.egress.URL+"/t1", `{"jsonrpc":"2.0","id":2,"method":"broken"}`, merge(eventStreamFields(), start()))
	_, _ = io.ReadAll(br)
	answers.mu.Lock()
	status := answers.status
	answers.mu.Unlock()
	if res.StatusCode != http.StatusServiceUnavailable || status != http.StatusServiceUnavailable {
		t.Fatalf("a JSON reply that broke off: the agent got %d, the ingress answered %d", res.StatusCode, status)
	}
}
