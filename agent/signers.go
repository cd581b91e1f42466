package agent

import (
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// Signers names the workloads whose signed responses a Transport believes. A response
// proves something only when its signer is the party the request was for
// (dialog-binding section 5: the server signs the response): a valid WIT of any other
// workload, on the path or in another trust domain, proves only that it exists.
// Section 11 bounds them further: a dialog does not cross a trust boundary, so every
// entry is of one trust domain.
type Signers struct {
	trustDomain string
	exact       []string // identifiers, as ID.String()
	prefixes    []string // scheme://trust-domain/[path/], ending in "/"
}

// TrustDomainSigners allows every workload of trust domain td, with either identifier
// scheme: the default of a Transport (its own trust domain) and of a linked dialog (the
// peer's).
func TrustDomainSigners(td string) (*Signers, error) {
	for _, scheme := range []string{identifier.SchemeWIMSE, identifier.SchemeSPIFFE} {
		if _, err := identifier.Parse(scheme + "://" + td + "/x"); err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "response signers: %q is not a trust domain", errcode.Cut(td))
		}
	}
	return &Signers{trustDomain: td, prefixes: []string{identifier.SchemeWIMSE + "://" + td + "/", identifier.SchemeSPIFFE + "://" + td + "/"}}, nil
}

// ParseSigners reads the expected signers: each entry a workload identifier (that
// workload only) or a prefix ending in "/" (scheme://trust-domain/ or
// scheme://trust-domain/path/: the workloads under it, by whole path segments, so that
// wimse://a.example/tool/ does not allow wimse://a.example/toolbox). All entries are of
// one trust domain; at least one entry is needed.
func ParseSigners(entries ...string) (*Signers, error) {
	if len(entries) == 0 {
		return nil, errcode.New(errcode.InvalidRequest, "response signers: at least one identifier or prefix")
	}
	s := &Signers{}
	for _, e := range entries {
		var id identifier.ID
		var err error
		if strings.HasSuffix(e, "/") {
			// A prefix names a trust domain and whole segments: it must read as an
			// identifier once a segment is added.
			id, err = identifier.Parse(e + "x")
			s.prefixes = append(s.prefixes, e)
		} else {
			id, err = identifier.Parse(e)
			s.exact = append(s.exact, id.String())
		}
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "response signer %q: a workload identifier, or a prefix scheme://trust-domain/[path/]", errcode.Cut(e))
		}
		switch {
		case s.trustDomain == "":
			s.trustDomain = id.TrustDomain()
		case s.trustDomain != id.TrustDomain():
			return nil, errcode.New(errcode.InvalidRequest, "response signers of two trust domains, %s and %s: a dialog does not cross a trust boundary (section 11)", s.trustDomain, errcode.Cut(id.TrustDomain()))
		}
	}
	return s, nil
}

// TrustDomain is the one trust domain of the signers.
func (s *Signers) TrustDomain() string { return s.trustDomain }

// Allows reports whether id may sign a response.
func (s *Signers) Allows(id identifier.ID) bool {
	if id.TrustDomain() != s.trustDomain {
		return false
	}
	str := id.String()
	for _, e := range s.exact {
		if e == str {
			return true
		}
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(str, p) {
			return true
		}
	}
	return false
}

// String lists the entries, for messages.
func (s *Signers) String() string {
	return strings.Join(append(append([]string(nil), s.exact...), s.prefixes...), " ")
}

// checkSigner refuses a verified response whose signer s does not allow.
func checkSigner(s *Signers, signer identifier.ID) error {
	if s.Allows(signer) {
		return nil
	}
	return errcode.New(errcode.ResponseSignerMismatch, "the response is signed by %s, not by a workload the request was for (%s)", errcode.Cut(signer.String()), errcode.Cut(s.String()))
}
