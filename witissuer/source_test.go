package witissuer_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/internal/testkit/fakeworkloadapi"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// sourceClient is a WIT issuer client whose SVID and bundle come from src, over a
// transport that makes a new handshake for every request.
func sourceClient(h *harness, src interface {
	x509svid.Source
	x509bundle.Source
}, server identifier.ID) *witissuer.Client {
	cfg, err := witissuer.ClientTLSConfigFromSource(src, src, server)
	if err != nil {
		h.t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   cfg,
		DisableKeepAlives: true,
		DialContext:       (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	return &witissuer.Client{Endpoint: h.url + witissuer.PathWIT, Audience: issuerID, HTTPClient: hc, Now: h.clock.Now}
}

// The x509svid method with go-spiffe's X509Source on a Workload API: the client
// presents the SVID the API gives now and verifies the issuer with the bundle it gives
// now, so after the API pushes another SVID the next request is authenticated as that
// one, with no new client and no restart.
func TestClientTLSConfigFromSourceFollowsRotation(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	api := fakeworkloadapi.Start(t)
	ca := fakeworkloadapi.NewCAFrom(h.ca.key, h.ca.cert)
	now := h.clock.Now()
	const first, second = "spiffe://example.org/ns/prod/sa/orders", "spiffe://example.org/ns/prod/sa/billing"
	api.Push(ca.Issue(t, first, now.Add(-time.Minute), now.Add(time.Hour)), h.ca.der)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src, err := workloadapi.NewX509Source(ctx, workloadapi.WithClientOptions(workloadapi.WithAddr(api.Addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := sourceClient(h, src, serverID)
	r, err := c.Request(ctx, testkit.NewKey(t, "ES256"))
	if err != nil || r.Sub != first {
		t.Fatalf("first SVID: %+v, %v", r, err)
	}

	// The rotation: another SVID (another identity, so that the WIT shows which one the
	// issuer saw).
	api.Push(ca.Issue(t, second, now.Add(-time.Minute), now.Add(time.Hour)), h.ca.der)
	select {
	case <-src.Updated():
	case <-ctx.Done():
		t.Fatal("the source heard of no update")
	}
	r, err = c.Request(ctx, testkit.NewKey(t, "ES256"))
	if err != nil || r.Sub != second {
		t.Fatalf("after the rotation: %+v, %v, want a WIT for %s", r, err, second)
	}

	// The bundle is read at each handshake too: one without the issuer's CA fails.
	other := fakeworkloadapi.NewCA(t, now)
	api.Push(ca.Issue(t, second, now.Add(-time.Minute), now.Add(time.Hour)), other.Cert.Raw)
	select {
	case <-src.Updated():
	case <-ctx.Done():
		t.Fatal("the source heard of no update")
	}
	if _, err := c.Request(ctx, testkit.NewKey(t, "ES256")); errcode.CodeOf(err) != errcode.InvalidSignature {
		t.Fatalf("issuer verified against a bundle without its CA: %v, want %s", err, errcode.InvalidSignature)
	}

	// Close drops the stream to the Workload API.
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for api.Streams() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the closed source's stream is still open")
		}
		time.Sleep(10 * time.Millisecond) // the server hears of the cancel asynchronously
	}
}

// staticSource is a source with a fixed SVID (or none) and bundle.
type staticSource struct {
	svid   *x509svid.SVID
	bundle *x509bundle.Bundle
}

func (s staticSource) GetX509SVID() (*x509svid.SVID, error) {
	if s.svid == nil {
		return nil, errors.New("no SVID yet")
	}
	return s.svid, nil
}

func (s staticSource) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	if s.bundle == nil || s.bundle.TrustDomain() != td {
		return nil, errors.New("no bundle")
	}
	return s.bundle, nil
}

func svidOf(t *testing.T, s fakeworkloadapi.SVID) *x509svid.SVID {
	t.Helper()
	v, err := x509svid.ParseRaw(s.CertDER, s.KeyPKCS8)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A source without an SVID, or with one that expired, is svid_unavailable (the client
// does not present an expired certificate); a source without the issuer's bundle too.
func TestClientTLSConfigFromSourceUnavailable(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ca := fakeworkloadapi.NewCAFrom(h.ca.key, h.ca.cert)
	now := time.Now()
	bundle := x509bundle.FromX509Authorities(spiffeid.RequireTrustDomainFromString(td), []*x509.Certificate{h.ca.cert})
	good := svidOf(t, ca.Issue(t, "spiffe://example.org/a", now.Add(-time.Minute), now.Add(time.Hour)))
	expired := svidOf(t, ca.Issue(t, "spiffe://example.org/a", now.Add(-2*time.Hour), now.Add(-time.Hour)))
	for name, src := range map[string]staticSource{
		"no SVID":     {bundle: bundle},
		"expired":     {svid: expired, bundle: bundle},
		"no bundle":   {svid: good},
		"good (ctrl)": {svid: good, bundle: bundle},
	} {
		_, err := sourceClient(h, src, serverID).Request(context.Background(), testkit.NewKey(t, "ES256"))
		want := errcode.SVIDUnavailable
		if name == "good (ctrl)" {
			want = ""
		}
		if errcode.CodeOf(err) != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if want != "" && errcode.KindOf(err) != errcode.Incomplete {
			t.Errorf("%s: kind %v", name, errcode.KindOf(err))
		}
	}
}

// The issuer's identifier is required: an SVID names no host to check instead.
func TestClientTLSConfigFromSourceNeedsServerID(t *testing.T) {
	src := staticSource{}
	if _, err := witissuer.ClientTLSConfigFromSource(src, src, identifier.ID{}); errcode.CodeOf(err) != errcode.InvalidRequest {
		t.Fatalf("no server ID: %v", err)
	}
}
