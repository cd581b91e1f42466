package wic

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Bounds on what a peer can make the verifier parse. A WIC is a few hundred octets; the
// limits only stop a hostile peer from handing over megabytes or a long chain.
const (
	MaxCertificateSize = 64 << 10
	MaxIntermediates   = 8
)

// Option configures Verify and the functions built on it.
type Option func(*config)

type config struct {
	trustDomain    string
	hasTrustDomain bool
	keyUsages      []x509.ExtKeyUsage
}

// WithTrustDomain requires the identifier to lie in trust domain td (the authority of a
// spiffe:// or wimse:// identifier, e.g. "example.org"); otherwise Verify fails with
// untrusted_issuer. Use it whenever the roots passed to Verify are the anchors of one
// trust domain (workload-creds-02 section 9.3, mutual-tls-02 section 3.2).
func WithTrustDomain(td string) Option {
	return func(c *config) { c.trustDomain, c.hasTrustDomain = td, true }
}

// WithKeyUsages requires the chain to be valid for one of usages (e.g.
// x509.ExtKeyUsageClientAuth when a server verifies a client). The default accepts any
// extended key usage, as go-spiffe does: the WIC profile only RECOMMENDS the TLS usages.
func WithKeyUsages(usages ...x509.ExtKeyUsage) Option {
	return func(c *config) { c.keyUsages = append([]x509.ExtKeyUsage(nil), usages...) }
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if len(c.keyUsages) == 0 {
		c.keyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageAny}
	}
	return c
}

// Verify validates the WIC leafDER (with optional intermediates, leaf's issuer first) at
// time now against roots, the trust anchors of the peer's trust domain, and returns the
// workload identifier from its single URI SAN. now is never read from the clock here:
// pass time.Now() in production. See the package documentation for the order of checks
// and the code of each rejection.
func Verify(leafDER []byte, intermediates [][]byte, roots []*x509.Certificate, now time.Time, opts ...Option) (identifier.ID, error) {
	leaf, inters, err := parseChain(leafDER, intermediates)
	if err != nil {
		return identifier.ID{}, err
	}
	return verifyParsed(leaf, inters, roots, now, newConfig(opts))
}

// VerifyWithBundles is Verify with the anchors chosen by the trust domain the leaf names
// (workload-creds-02 section 9.3): the URI SAN is read first, unauthenticated, only to
// pick the bundle; the chain must then verify to that bundle's authorities, so a CA of
// one trust domain cannot vouch for an identifier of another. A trust domain without a
// bundle is untrusted_issuer. wimse:// trust domains are looked up by the same name.
func VerifyWithBundles(leafDER []byte, intermediates [][]byte, bundles x509bundle.Source, now time.Time, opts ...Option) (identifier.ID, error) {
	leaf, inters, err := parseChain(leafDER, intermediates)
	if err != nil {
		return identifier.ID{}, err
	}
	claimed, err := IdentifierFromCert(leaf)
	if err != nil {
		return identifier.ID{}, err
	}
	if bundles == nil {
		return identifier.ID{}, errcode.New(errcode.UntrustedIssuer, "no trust bundles configured")
	}
	td, err := spiffeid.TrustDomainFromString(claimed.TrustDomain())
	if err != nil {
		return identifier.ID{}, errcode.Wrap(errcode.UntrustedIssuer, err, "trust domain %q", claimed.TrustDomain())
	}
	b, err := bundles.GetX509BundleForTrustDomain(td)
	if err != nil {
		return identifier.ID{}, errcode.Wrap(errcode.UntrustedIssuer, err, "no X.509 bundle for trust domain %q", claimed.TrustDomain())
	}
	cfg := newConfig(opts)
	id, err := verifyParsed(leaf, inters, b.X509Authorities(), now, cfg)
	if err != nil {
		return identifier.ID{}, err
	}
	// The anchors were chosen by this leaf's own trust domain, so this cannot fail today;
	// it stays so that the section 9.3 binding is checked, not merely implied.
	if !id.MemberOf(claimed.TrustDomain()) {
		return identifier.ID{}, errcode.New(errcode.UntrustedIssuer, "identifier %s left trust domain %q", id, claimed.TrustDomain())
	}
	return id, nil
}

// VerifyConnectionFunc returns a tls.Config.VerifyConnection callback that runs Verify
// on the peer's certificate chain at clock() (time.Now when clock is nil). Pair it with
// ClientAuth: tls.RequireAnyClientCert on a server, or InsecureSkipVerify on a client (a
// WIC has no DNS name for crypto/tls to check). It checks the chain and, with
// WithTrustDomain, the trust domain; a client must also compare the server's identifier
// with the one it was configured with (mutual-tls-02 section 3.2.1), so a client wraps it
// or calls Verify and compares the returned ID, as the package's TLS test does.
// VerifyConnection, unlike VerifyPeerCertificate, also runs on resumed sessions, so a
// changed policy applies to them too. The handler then reads the identity with
// IdentifierFromCert(r.TLS.PeerCertificates[0]).
func VerifyConnectionFunc(roots []*x509.Certificate, clock func() time.Time, opts ...Option) func(tls.ConnectionState) error {
	cfg := newConfig(opts)
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errcode.New(errcode.MissingCredential, "peer presented no certificate")
		}
		if len(cs.PeerCertificates)-1 > MaxIntermediates {
			return errcode.New(errcode.CertificateParseError, "peer sent %d intermediates, limit %d", len(cs.PeerCertificates)-1, MaxIntermediates)
		}
		now := time.Now()
		if clock != nil {
			now = clock()
		}
		_, err := verifyParsed(cs.PeerCertificates[0], cs.PeerCertificates[1:], roots, now, cfg)
		return err
	}
}

// IdentifierFromCert returns the workload identifier of cert: its one URI SAN, which must
// be a valid workload identifier exactly as written (workload-creds-02 section 6.1). No
// URI SAN is missing_identifier; two or more URI SANs, whatever their scheme, is
// multiple_identifiers; other SAN types (DNS, IP, e-mail) are ignored. It does not verify
// the certificate: use it on a peer certificate that crypto/tls or x509svid.Verify has
// already validated, or on the leaf Verify accepted.
//
// The URI is read from the raw subjectAltName extension rather than cert.URIs, because
// url.URL re-serialises and could turn a second spelling into an accepted one.
func IdentifierFromCert(cert *x509.Certificate) (identifier.ID, error) {
	if cert == nil {
		return identifier.ID{}, errcode.New(errcode.CertificateParseError, "no certificate")
	}
	uris, err := uriSANs(cert)
	if err != nil {
		return identifier.ID{}, err
	}
	switch len(uris) {
	case 0:
		return identifier.ID{}, errcode.New(errcode.MissingIdentifier, "certificate has no URI SAN")
	case 1:
	default:
		return identifier.ID{}, errcode.New(errcode.MultipleIdentifiers, "certificate has %d URI SANs, exactly one allowed", len(uris))
	}
	return identifier.Parse(uris[0])
}

func uriSANs(cert *x509.Certificate) ([]string, error) {
	var out []string
	found := false
	for _, ext := range cert.Extensions {
		if !ext.Id.Equal(oidSubjectAltName) {
			continue
		}
		found = true
		s := cryptobyte.String(ext.Value)
		var names cryptobyte.String
		if !s.ReadASN1(&names, cbasn1.SEQUENCE) || !s.Empty() {
			return nil, errcode.New(errcode.CertificateParseError, "malformed subjectAltName")
		}
		for !names.Empty() {
			var v cryptobyte.String
			var tag cbasn1.Tag
			if !names.ReadAnyASN1(&v, &tag) {
				return nil, errcode.New(errcode.CertificateParseError, "malformed subjectAltName entry")
			}
			// Only the primitive [6] form counts, exactly as crypto/x509 fills cert.URIs,
			// so this count and the standard library's never disagree.
			if tag == tagURI {
				out = append(out, string(v))
			}
		}
	}
	if !found {
		// A certificate assembled in memory (not parsed) has URIs but no raw extension.
		for _, u := range cert.URIs {
			out = append(out, u.String())
		}
	}
	return out, nil
}

func parseChain(leafDER []byte, intermediates [][]byte) (*x509.Certificate, []*x509.Certificate, error) {
	leaf, err := parseCert(leafDER)
	if err != nil {
		return nil, nil, err
	}
	if len(intermediates) > MaxIntermediates {
		return nil, nil, errcode.New(errcode.CertificateParseError, "%d intermediates, limit %d", len(intermediates), MaxIntermediates)
	}
	inters := make([]*x509.Certificate, 0, len(intermediates))
	for i, der := range intermediates {
		c, err := parseCert(der)
		if err != nil {
			return nil, nil, errcode.Wrap(errcode.CertificateParseError, err, "intermediate %d", i)
		}
		inters = append(inters, c)
	}
	return leaf, inters, nil
}

func parseCert(der []byte) (*x509.Certificate, error) {
	if len(der) == 0 {
		return nil, errcode.New(errcode.CertificateParseError, "empty certificate")
	}
	if len(der) > MaxCertificateSize {
		return nil, errcode.New(errcode.CertificateParseError, "certificate of %d octets, limit %d", len(der), MaxCertificateSize)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errcode.Wrap(errcode.CertificateParseError, err, "not a DER X.509 certificate")
	}
	return c, nil
}

func verifyParsed(leaf *x509.Certificate, inters, roots []*x509.Certificate, now time.Time, cfg config) (identifier.ID, error) {
	if leaf == nil {
		return identifier.ID{}, errcode.New(errcode.CertificateParseError, "no certificate")
	}
	// Zero leeway (wimsey SOURCE.md): the vectors sit one second outside the window.
	if now.Before(leaf.NotBefore) {
		return identifier.ID{}, errcode.New(errcode.CertificateNotValid, "not valid before %s (now %s)", leaf.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if now.After(leaf.NotAfter) {
		return identifier.ID{}, errcode.New(errcode.CertificateNotValid, "expired at %s (now %s)", leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	rootPool := x509.NewCertPool()
	nRoots := 0
	for _, r := range roots {
		if r != nil {
			rootPool.AddCert(r)
			nRoots++
		}
	}
	// An empty pool must never fall through to crypto/x509's system roots (it only does so
	// for a nil pool, but an explicit refusal also gives the clearer code).
	if nRoots == 0 {
		return identifier.ID{}, errcode.New(errcode.UntrustedIssuer, "no trust anchors for the peer's trust domain")
	}
	if err := checkIssuerAlgorithm(leaf, inters, roots); err != nil {
		return identifier.ID{}, err
	}
	interPool := x509.NewCertPool()
	for _, c := range inters {
		if c != nil {
			interPool.AddCert(c)
		}
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots:         rootPool,
		Intermediates: interPool,
		CurrentTime:   now,
		KeyUsages:     cfg.keyUsages,
	})
	if err != nil {
		return identifier.ID{}, chainError(err)
	}
	if !anyChainKeyConsistent(chains) {
		return identifier.ID{}, errcode.New(errcode.UnsupportedAlg, "every chain has a link whose signature algorithm its issuer's key cannot make")
	}
	id, err := IdentifierFromCert(leaf)
	if err != nil {
		return identifier.ID{}, err
	}
	// A certificate that can sign certificates is a CA, not a workload; go-spiffe draws
	// the same line for X509-SVIDs. Checked after the identifier so a bare CA certificate
	// still reports the more telling missing_identifier.
	if leaf.IsCA || leaf.KeyUsage&(x509.KeyUsageCertSign|x509.KeyUsageCRLSign) != 0 {
		return identifier.ID{}, errcode.New(errcode.CertificateNotValid, "a CA certificate is not valid as a workload identity certificate")
	}
	if cfg.hasTrustDomain && !id.MemberOf(cfg.trustDomain) {
		return identifier.ID{}, errcode.New(errcode.UntrustedIssuer, "identifier %s is outside the expected trust domain %q", id, cfg.trustDomain)
	}
	return id, nil
}

// checkIssuerAlgorithm takes the algorithm from the key of each CA that could have issued
// leaf (same subject as leaf's issuer) and compares it with the algorithm the leaf
// claims. If some such CA exists but none of their keys can make the claimed algorithm,
// the answer is unsupported_alg (wimsey "ca-of-the-other-algorithm"), not a signature
// failure. With no candidate at all, path validation reports the unknown authority.
func checkIssuerAlgorithm(leaf *x509.Certificate, inters, roots []*x509.Certificate) error {
	candidates := 0
	for _, set := range [][]*x509.Certificate{roots, inters} {
		for _, c := range set {
			if c == nil || !bytes.Equal(c.RawSubject, leaf.RawIssuer) {
				continue
			}
			candidates++
			if alg, err := sigAlgForKey(c.PublicKey); err == nil && alg == leaf.SignatureAlgorithm {
				return nil
			}
		}
	}
	if candidates > 0 {
		return errcode.New(errcode.UnsupportedAlg, "the issuing CA's key cannot make %v, the algorithm the certificate claims", leaf.SignatureAlgorithm)
	}
	if _, ok := supportedSigAlgs[leaf.SignatureAlgorithm]; !ok {
		return errcode.New(errcode.UnsupportedAlg, "signature algorithm %v (only ECDSA P-256 SHA-256 and Ed25519)", leaf.SignatureAlgorithm)
	}
	return nil
}

var supportedSigAlgs = map[x509.SignatureAlgorithm]struct{}{x509.ECDSAWithSHA256: {}, x509.PureEd25519: {}}

// anyChainKeyConsistent applies the same rule to every link of the verified chains:
// crypto/x509 lets the certificate pick the hash (a P-256 key "signing" with SHA-384),
// this profile does not.
func anyChainKeyConsistent(chains [][]*x509.Certificate) bool {
next:
	for _, chain := range chains {
		for i := 0; i+1 < len(chain); i++ {
			alg, err := sigAlgForKey(chain[i+1].PublicKey)
			if err != nil || alg != chain[i].SignatureAlgorithm {
				continue next
			}
		}
		return true
	}
	return false
}

// chainError maps crypto/x509 path-validation errors onto the conformance codes. A chain
// that no anchor signs is invalid_signature (wimsey "wrong-ca"): from the verifier's side
// the certificate's signature does not verify under any trusted key.
func chainError(err error) error {
	var invalid x509.CertificateInvalidError
	var critical x509.UnhandledCriticalExtension
	var insecure x509.InsecureAlgorithmError
	var unknown x509.UnknownAuthorityError
	switch {
	case errors.As(err, &invalid):
		return errcode.Wrap(errcode.CertificateNotValid, err, "chain")
	case errors.As(err, &critical):
		return errcode.Wrap(errcode.UnsupportedCritical, err, "chain")
	case errors.As(err, &insecure):
		return errcode.Wrap(errcode.UnsupportedAlg, err, "chain")
	case errors.As(err, &unknown):
		return errcode.Wrap(errcode.InvalidSignature, err, "no trusted CA signed this certificate")
	}
	return errcode.Wrap(errcode.InvalidSignature, err, "chain does not verify")
}
