package wic

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// A real handshake on loopback (tls.Listen + http.Server.Serve; httptest.StartTLS would
// put its own certificate in front of ours). The server requires a client certificate
// and verifies it with VerifyConnectionFunc; the client, which has no DNS name to check,
// verifies the server's WIC and its expected identifier (mutual-tls-02 section 3.2.1).
// The handler takes the identity from the TLS layer with IdentifierFromCert (section 5).
func TestMutualTLS02Sec3_2_LoopbackHandshake(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			now := time.Now()
			ca := newTestCA(t, alg, now.Add(-time.Hour), now.Add(time.Hour))
			serverID := identifier.MustParse("spiffe://example.org/svc/server")
			clientID := identifier.MustParse("wimse://example.org/svc/client")

			var verified atomic.Int32
			verifyClient := VerifyConnectionFunc(ca.roots(), nil, WithTrustDomain("example.org"), WithKeyUsages(x509.ExtKeyUsageClientAuth))
			addr := serve(t, &tls.Config{
				MinVersion:   tls.VersionTLS13,
				Certificates: []tls.Certificate{tlsCert(t, ca, alg, serverID.String(), now)},
				ClientAuth:   tls.RequireAnyClientCert,
				VerifyConnection: func(cs tls.ConnectionState) error {
					verified.Add(1)
					return verifyClient(cs)
				},
			})

			client := newClient(t, ca, serverID, tlsCert(t, ca, alg, clientID.String(), now))
			body, state := get(t, client, addr)
			if body != clientID.String() {
				t.Fatalf("server saw %q", body)
			}
			// A second connection resumes the session; VerifyConnection must still run.
			body, state = get(t, client, addr)
			if body != clientID.String() {
				t.Fatalf("server saw %q on the second connection", body)
			}
			if !state.DidResume {
				t.Fatal("second connection did not resume; the resumption path was not exercised")
			}
			if n := verified.Load(); n != 2 {
				t.Fatalf("server verified %d handshakes, want 2", n)
			}

			// A client whose certificate another CA issued never reaches the handler.
			foreign := newTestCA(t, alg, now.Add(-time.Hour), now.Add(time.Hour))
			bad := newClient(t, ca, serverID, tlsCert(t, foreign, alg, clientID.String(), now))
			if _, err := bad.Get("https://" + addr + "/"); err == nil {
				t.Fatal("a client of a foreign CA was served")
			}
			// A client with a WIC outside the expected trust domain neither.
			outside := newClient(t, ca, serverID, tlsCert(t, ca, alg, "wimse://evil.example/svc/client", now))
			if _, err := outside.Get("https://" + addr + "/"); err == nil {
				t.Fatal("a client outside the trust domain was served")
			}
			// And a client that expects another server identity refuses this one.
			wrongServer := newClient(t, ca, identifier.MustParse("spiffe://example.org/svc/other"), tlsCert(t, ca, alg, clientID.String(), now))
			if _, err := wrongServer.Get("https://" + addr + "/"); err == nil || !strings.Contains(err.Error(), "server identifier") {
				t.Fatalf("client accepted the wrong server identity: %v", err)
			}
		})
	}
}

func tlsCert(t *testing.T, ca testCA, alg, id string, now time.Time) tls.Certificate {
	t.Helper()
	der, key := ca.issue(t, alg, id, now.Add(-time.Minute), now.Add(time.Hour))
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		// Rejected handshakes are expected here; keep them out of the test output.
		ErrorLog: log.New(io.Discard, "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
				http.Error(w, "no peer certificate", http.StatusUnauthorized)
				return
			}
			id, err := IdentifierFromCert(r.TLS.PeerCertificates[0])
			if err != nil {
				http.Error(w, string(errcode.CodeOf(err)), http.StatusForbidden)
				return
			}
			_, _ = io.WriteString(w, id.String())
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func newClient(t *testing.T, ca testCA, serverID identifier.ID, cert tls.Certificate) *http.Client {
	t.Helper()
	roots := ca.roots()
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true, // each request is a new handshake, so resumption is tested
			DialContext:       (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSClientConfig: &tls.Config{
				MinVersion:   tls.VersionTLS13,
				Certificates: []tls.Certificate{cert},
				// A WIC names a workload, not a host: crypto/tls's hostname check is
				// replaced by VerifyConnection, which runs on every handshake.
				InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
				ClientSessionCache: tls.NewLRUClientSessionCache(4),
				VerifyConnection: func(cs tls.ConnectionState) error {
					if len(cs.PeerCertificates) == 0 {
						return fmt.Errorf("no server certificate")
					}
					var inters [][]byte
					for _, c := range cs.PeerCertificates[1:] {
						inters = append(inters, c.Raw)
					}
					id, err := Verify(cs.PeerCertificates[0].Raw, inters, roots, time.Now(),
						WithTrustDomain(serverID.TrustDomain()), WithKeyUsages(x509.ExtKeyUsageServerAuth))
					if err != nil {
						return err
					}
					if !id.Equal(serverID) {
						return fmt.Errorf("server identifier %s, want %s", id, serverID)
					}
					return nil
				},
			},
		},
	}
}

func get(t *testing.T, c *http.Client, addr string) (string, tls.ConnectionState) {
	t.Helper()
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return string(b), *resp.TLS
}
