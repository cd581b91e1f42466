// Package fakeworkloadapi serves the X.509 part of the SPIFFE Workload API on a unix
// socket for tests, through the server interface go-spiffe generates from the API's
// protocol buffers (github.com/spiffe/go-spiffe/v2/proto/spiffe/workload): the wire
// format is go-spiffe's, only the answers are the test's. go-spiffe's own fake
// (internal/test/fakeworkloadapi) is internal to its module.
//
// Like a SPIRE agent, it refuses callers without the security header and streams an
// X509SVIDResponse whenever the workload's SVID or bundle changes. Until the first Push
// it sends nothing, as an agent that has not attested the workload yet. The
// certificates it hands out are real: CA issues them as SPIRE does (digitalSignature,
// which go-spiffe's x509svid.Parse requires).
//
// It implements no spec section.
package fakeworkloadapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	workload "github.com/spiffe/go-spiffe/v2/proto/spiffe/workload"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dialogtrust/dialogtrust/wic"
)

// Server is a Workload API on a unix socket; Addr is its address as go-spiffe takes
// it (unix:///path).
type Server struct {
	workload.UnimplementedSpiffeWorkloadAPIServer
	Addr string

	mu      sync.Mutex
	current *workload.X509SVIDResponse
	changed chan struct{}
	streams atomic.Int64
}

// Start serves a Workload API until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	// Short: a unix socket path is limited to about 100 bytes, t.TempDir() may be longer.
	dir, err := os.MkdirTemp("", "wapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "unix://" + sock, changed: make(chan struct{})}
	gs := grpc.NewServer()
	workload.RegisterSpiffeWorkloadAPIServer(gs, s)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return s
}

// Push makes svid (the workload's only SVID) and its trust domain's bundle (DER of each
// authority) the current answer, sent at once on every open stream.
func (s *Server) Push(svid SVID, bundle ...[]byte) {
	var b []byte
	for _, c := range bundle {
		b = append(b, c...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = &workload.X509SVIDResponse{Svids: []*workload.X509SVID{{
		SpiffeId: svid.ID, X509Svid: svid.CertDER, X509SvidKey: svid.KeyPKCS8, Bundle: b}}}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Streams is the number of X.509 streams open now: a client that closed its source
// has none.
func (s *Server) Streams() int { return int(s.streams.Load()) }

// FetchX509SVID implements the Workload API's X.509 stream.
func (s *Server) FetchX509SVID(_ *workload.X509SVIDRequest, stream grpc.ServerStreamingServer[workload.X509SVIDResponse]) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	if v := md.Get("workload.spiffe.io"); len(v) != 1 || v[0] != "true" {
		return status.Error(codes.InvalidArgument, "security header missing")
	}
	s.streams.Add(1)
	defer s.streams.Add(-1)
	for {
		s.mu.Lock()
		cur, changed := s.current, s.changed
		s.mu.Unlock()
		if cur != nil {
			if err := stream.Send(cur); err != nil {
				return err
			}
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// CA is one trust domain's X.509 authority.
type CA struct {
	key    *ecdsa.PrivateKey
	Cert   *x509.Certificate
	serial atomic.Int64
}

// NewCA makes a CA (package wic's layout, as the project's other tests use) valid from
// a day before now to a day after.
func NewCA(t testing.TB, now time.Time) *CA {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := wic.NewCA(k, now.Add(-24*time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return NewCAFrom(k, c)
}

// NewCAFrom is the CA of a key and certificate a test made already.
func NewCAFrom(key *ecdsa.PrivateKey, cert *x509.Certificate) *CA {
	ca := &CA{key: key, Cert: cert}
	ca.serial.Store(100)
	return ca
}

// Key is the CA's private key, for tests that issue certificates of another layout
// with it (package wic's, say).
func (ca *CA) Key() *ecdsa.PrivateKey { return ca.key }

// SVID is an X.509-SVID as the Workload API carries it.
type SVID struct {
	ID       string
	CertDER  []byte
	KeyPKCS8 []byte
	Leaf     *x509.Certificate
}

// Issue makes an X.509-SVID for the SPIFFE ID id valid in [notBefore, notAfter], for
// client and server authentication, with a fresh P-256 key and a serial of its own.
func (ca *CA) Issue(t testing.TB, id string, notBefore, notAfter time.Time) SVID {
	t.Helper()
	u, err := url.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial.Add(1)), URIs: []*url.URL{u},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, k.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return SVID{ID: id, CertDER: der, KeyPKCS8: p8, Leaf: leaf}
}
