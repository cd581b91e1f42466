package revokeapi

import (
	"crypto/x509"
	"slices"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
)

// CertBundles groups the anchors of administrators' client certificates
// (Config.CertRoots, revocations.admin.client_ca_file) by the trust domain each names
// in its URI SAN (wic.BundlesOf), and refuses an anchor that names none or names a
// trust domain this TTS does not serve. A client certificate then verifies only to the
// anchors of its own identifier's trust domain (wic.VerifyWithBundles): another
// domain's CA in the same file cannot name this domain's administrator.
func CertBundles(roots []*x509.Certificate, trustDomains []string) (*x509bundle.Set, error) {
	set, err := wic.BundlesOf(roots)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "revokeapi: an anchor of client certificates must name its trust domain in one URI SAN (spiffe://td)")
	}
	for _, b := range set.Bundles() {
		if td := b.TrustDomain().Name(); !slices.Contains(trustDomains, td) {
			return nil, errcode.New(errcode.InvalidRequest, "revokeapi: an anchor of client certificates is of trust domain %s, which this TTS does not serve", errcode.Cut(td))
		}
	}
	return set, nil
}
