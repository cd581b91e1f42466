package wic

import (
	"crypto/x509"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// TrustDomainOfCA is the trust domain an anchor names: its one URI SAN, spiffe://td or
// wimse://td with no path, as SPIFFE CAs carry spiffe://td (X.509-SVID section 4.1).
// An anchor that names none (missing_identifier), several (multiple_identifiers), or
// anything else (the identifier package's code) cannot be told apart from another
// domain's, so BundlesOf refuses it.
func TrustDomainOfCA(ca *x509.Certificate) (string, error) {
	if ca == nil {
		return "", errcode.New(errcode.CertificateParseError, "no certificate")
	}
	uris, err := uriSANs(ca)
	if err != nil {
		return "", err
	}
	switch len(uris) {
	case 0:
		return "", errcode.New(errcode.MissingIdentifier, "the CA certificate %q names no trust domain (a URI SAN spiffe://td or wimse://td)", errcode.Cut(ca.Subject.String()))
	case 1:
	default:
		return "", errcode.New(errcode.MultipleIdentifiers, "the CA certificate %q has %d URI SANs, one trust domain allowed", errcode.Cut(ca.Subject.String()), len(uris))
	}
	scheme, td, ok := strings.Cut(uris[0], "://")
	if !ok || (scheme != identifier.SchemeSPIFFE && scheme != identifier.SchemeWIMSE) || strings.ContainsAny(td, "/?#") {
		return "", errcode.New(errcode.MissingIdentifier, "the CA certificate %q names %q, not a trust domain (spiffe://td or wimse://td)", errcode.Cut(ca.Subject.String()), errcode.Cut(uris[0]))
	}
	// The trust domain as an identifier's authority, and as go-spiffe reads it
	// (VerifyWithBundles looks bundles up by it).
	if _, err := identifier.Parse(identifier.SchemeSPIFFE + "://" + td + "/x"); err != nil {
		return "", err
	}
	if _, err := spiffeid.TrustDomainFromString(td); err != nil {
		return "", errcode.Wrap(errcode.InvalidTrustDomainChar, err, "trust domain %q", errcode.Cut(td))
	}
	return td, nil
}

// BundlesOf groups anchors into one bundle per trust domain, the one each names
// (TrustDomainOfCA), for VerifyWithBundles: a file of several domains' CAs (a
// federation bundle) then lets each CA vouch only for identifiers of its own domain
// (workload-creds-02 section 9.3). An anchor that names no trust domain is refused.
func BundlesOf(anchors []*x509.Certificate) (*x509bundle.Set, error) {
	set := x509bundle.NewSet()
	for _, ca := range anchors {
		name, err := TrustDomainOfCA(ca)
		if err != nil {
			return nil, err
		}
		td := spiffeid.RequireTrustDomainFromString(name)
		b, ok := set.Get(td)
		if !ok {
			b = x509bundle.New(td)
			set.Add(b)
		}
		b.AddX509Authority(ca)
	}
	return set, nil
}
