package proxyservice

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/proxy"
)

const (
	streamEvent1 = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
	streamEvent2 = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"booked\"}]}}\n\n"
)

// A pair of proxy commands passes an event stream through as it comes (the listeners'
// wrappers let the proxies flush): the agent reads the first event while the
// application waits for it to, before the application sends the second. The ingress
// signs no responses and the route requires none, so nothing needs the body whole.
func TestProxyCommandsStream(t *testing.T) { proxyCommandsStream(t, "") }

// The same with an ingress that signs responses, with stream_unsigned: the event stream
// nobody asked to have signed passes unsigned, as it comes (http-signature-07 section
// 3.5).
func TestProxyCommandsStreamSigningIngress(t *testing.T) {
	proxyCommandsStream(t, "  sign_responses: true\n  stream_unsigned: true\n")
}

// proxyCommandsStream runs the pair with ingressSigning in place of the ingress's
// sign_responses member.
func proxyCommandsStream(t *testing.T, ingressSigning string) {
	witURL, ttsURL := proxyDomain(t)
	read1 := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, streamEvent1)
		w.(http.Flusher).Flush()
		select {
		case <-read1:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, streamEvent2)
	}))
	defer app.Close()
	in := startProxy(t, strings.Replace(ingressYAML(witURL, ttsURL, app.URL), "  sign_responses: true\n", ingressSigning+"  stream_idle_timeout: 1m\n", 1))
	eg := strings.Replace(egressYAML(witURL, ttsURL, in["ingress"]), ", require_signed_response: true}", "}", 1)
	out := startProxy(t, egressWith(eg, "  stream_idle_timeout: 1m\n"))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", out["egress"]+"/t1", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book","arguments":{}}}`))
	req.Header.Set(proxy.StartDialogField, "?1")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.ContentLength != -1 {
		t.Fatalf("%d length %d %v", res.StatusCode, res.ContentLength, res.Header)
	}
	br := bufio.NewReader(res.Body)
	var ev strings.Builder
	for !strings.HasSuffix(ev.String(), "\n\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", ev.String(), err)
		}
		ev.WriteString(line)
	}
	if ev.String() != streamEvent1 {
		t.Fatalf("event 1: %q", ev.String())
	}
	close(read1)
	if rest, err := io.ReadAll(br); err != nil || string(rest) != streamEvent2 {
		t.Fatalf("the rest: %q (%v)", rest, err)
	}
}

func TestProxyCheckConfigStreamIdleTimeout(t *testing.T) {
	egress := checkedEgressYAML
	ingress := checkedIngressYAML
	withEgress := func(v string) string {
		return egressWith(egress, "  stream_idle_timeout: "+v+"\n")
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"egress":           {withEgress("90s"), ""},
		"ingress":          {ingress + "  stream_idle_timeout: 10m\n", ""},
		"negative egress":  {withEgress("-1s"), "egress.stream_idle_timeout: must not be negative"},
		"negative ingress": {ingress + "  stream_idle_timeout: -1s\n", "ingress.stream_idle_timeout: must not be negative"},
		"stream_unsigned":  {ingress + "  stream_unsigned: true\n", ""},
		"unsigned, alone":  {strings.Replace(ingress, "  sign_responses: true\n", "  stream_unsigned: true\n", 1), "ingress.stream_unsigned needs sign_responses"},
	} {
		expectCheckConfig(t, name, c.yaml, c.want)
	}
}
