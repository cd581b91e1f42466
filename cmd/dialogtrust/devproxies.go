package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/proxyservice"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// The proxy pair of dev --proxies: agent a1's egress (devWorkload) routes devPairPrefix
// to tool t1's ingress, in front of the echo application.
const (
	devTool       = "wimse://" + devTrustDomain + "/tool/t1"
	devPairPrefix = "/t1"
)

// devPair is where the pair of dev --proxies listens: the egress and the ingress, each
// proxy's operational listener (/readyz), and the echo application, or the user's own
// application (app, --app) in its place.
type devPair struct {
	egress, ingress, egressOps, ingressOps, echo string
	app                                          string
}

// startDevPair starts the two proxies and, without --app, the echo application, each
// run by the service runner like `dialogtrust proxy` with a configuration made here,
// logging in logFormat; every one reports on done when it ends. It returns the pair's
// addresses and how many it started. The WIT issuer must be ready: a proxy discovers it
// at start.
func startDevPair(ctx context.Context, witURL, ttsURL string, o devPairOptions, logFormat string, done chan<- devResult, stderr io.Writer) (*devPair, int, error) {
	egressAddr := o.egressAddr
	if egressAddr == "" {
		egressAddr = "127.0.0.1:0"
	}
	addrs, err := freePorts([]string{"--egress-addr", "--proxies", "--proxies", "--proxies"}, egressAddr, "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	p := &devPair{egress: addrs[0], ingress: addrs[1], egressOps: addrs[2], ingressOps: addrs[3], app: o.app}
	started := 2
	if p.app == "" {
		echoL, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, 0, usageError{"--proxies: " + err.Error()}
		}
		p.echo = echoL.Addr().String()
		go func() { done <- devResult{"--proxies", serveDevEcho(ctx, echoL)} }()
		started++
	}
	ep := devProgram(proxyservice.Program, logFormat)
	ep.Config.Default = devEgressConfig(p, witURL, ttsURL)
	go func() {
		// A fixed --egress-addr that is taken fails here: the error names that flag.
		done <- devResult{"--egress-addr", kit.Run(ctx, ep, devArgs(p.egressOps, logFormat), nil, stderr, stderr, nil)}
	}()
	ip := devProgram(proxyservice.Program, logFormat)
	ip.Config.Default = devIngressConfig(p, witURL, ttsURL)
	go func() {
		done <- devResult{"--proxies", kit.Run(ctx, ip, devArgs(p.ingressOps, logFormat), nil, stderr, stderr, nil)}
	}()
	return p, started, nil
}

// devEgressConfig is a1's proxy: an egress whose one route sends devPairPrefix to t1's
// ingress, with a Txn-Token of dev.local for the dialog (a self-signed subject, as the
// printed `txn request` uses) and the HTTP signature, demanding a signed response.
func devEgressConfig(p *devPair, witURL, ttsURL string) []byte {
	return fmt.Appendf(nil, `listen: %q
trust_domains: [%s]
workload: {id: %q, wit_issuer: %q, auth: development}
wits: [{trust_domain: %s, jwks_url: %q}]
egress:
  listen: %q
  tts: {token_endpoint: %q, issuer: %q, self_signed_subject: %q}
  routes:
    - {prefix: %s, upstream: %q, audience: %s, scope: %s, recipient: %q, proof: httpsig, require_signed_response: true}
`, p.egressOps, devTrustDomain, devWorkload, witURL, devTrustDomain, witURL+witissuer.PathJWKS,
		p.egress, ttsURL+tts.PathToken, ttsURL, devSubject,
		devPairPrefix, "http://"+p.ingress, devTrustDomain, devScope, p.ingressRecipient())
}

// devIngressConfig is t1's proxy, in front of p.upstream(): a stateful ingress (it establishes the dialogs the
// egress starts) that demands a Txn-Token of dev.local and signs its responses.
func devIngressConfig(p *devPair, witURL, ttsURL string) []byte {
	return fmt.Appendf(nil, `listen: %q
trust_domains: [%s]
workload: {id: %q, wit_issuer: %q, auth: development}
wits: [{trust_domain: %s, jwks_url: %q}]
ingress:
  listen: %q
  upstream: %q
  audiences: [%q]
  txn_tokens: {jwks_url: %q}
  require_txn_token: true
  require_dialog: true
  stateful: true
  sign_responses: true
`, p.ingressOps, devTrustDomain, devTool, witURL, devTrustDomain, witURL+witissuer.PathJWKS,
		p.ingress, p.upstream(), p.ingressRecipient(), ttsURL+tts.PathJWKS)
}

// ingressRecipient is the name the egress signs for (wimse-aud) and the ingress accepts.
func (p *devPair) ingressRecipient() string { return "http://" + p.ingress + "/" }

// devEchoMaxBody bounds the body the echo application reads.
const devEchoMaxBody = 1 << 20

// devEcho is the application behind the ingress: it answers with the method, the path,
// the body and every Dialogtrust-Verified-* field it received (the Txn-Token claims as
// JSON), so that what the ingress verified can be seen.
func devEcho(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, devEchoMaxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	verified := map[string]any{}
	for name, vals := range r.Header {
		if !strings.HasPrefix(name, proxy.FieldPrefix+"Verified-") || len(vals) == 0 {
			continue
		}
		if name == proxy.VerifiedTxnTokenClaimsField && json.Valid([]byte(vals[0])) {
			verified[name] = json.RawMessage(vals[0])
			continue
		}
		verified[name] = vals[0]
	}
	out, err := json.MarshalIndent(map[string]any{"method": r.Method, "path": r.URL.Path, "body": string(body), "verified": verified}, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(out, '\n'))
}

// serveDevEcho serves devEcho on l until ctx ends.
func serveDevEcho(ctx context.Context, l net.Listener) error {
	return serveUntilDone(ctx, &http.Server{Handler: http.HandlerFunc(devEcho), ReadHeaderTimeout: 10 * time.Second}, l)
}

// serveUntilDone serves srv on l until ctx ends, then shuts it down, giving the
// requests in flight up to 5 seconds. The error is Serve's when it stopped on its own,
// else Shutdown's.
func serveUntilDone(ctx context.Context, srv *http.Server, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// devPairCurl is the printed command that goes through the pair: plain HTTP to the
// egress, asking it to start a dialog; to the echo application's /echo, or to the root
// of the user's application.
func devPairCurl(p *devPair) string {
	path := "/echo"
	if p.app != "" {
		path = "/"
	}
	return "curl -sS -H " + shellQuote(proxy.StartDialogField+": ?1") + " -H 'Content-Type: application/json' -d " +
		shellQuote(`{"hello":"t1"}`) + " http://" + p.egress + devPairPrefix + path
}
