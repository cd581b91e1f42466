package spiffeadapter

import (
	"context"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/exp/bundle/witbundle"
	"github.com/spiffe/go-spiffe/v2/exp/svid/witsvid"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// getTimeout bounds one GetWITSVIDForID call (witsvid.Source has no context).
const getTimeout = 30 * time.Second

// SVIDSource is a witsvid.Source backed by a WIT issuer: for each SPIFFE ID asked for it
// keeps a wit.RefreshingSource that requests that ID as sub (the issuer grants it only
// when it is the authenticated workload's own identity or a policy rule maps it), with a
// fresh ES256 key per WIT, refreshed before expiry. Every WIT is validated with
// witsvid.ParseAndValidate against bundles before it is handed out, so a caller gets
// only what go-spiffe's relying parties will accept. Safe for concurrent use.
type SVIDSource struct {
	client  witissuer.Client
	bundles witbundle.Source
	opts    []wit.SourceOption

	mu      sync.Mutex
	sources map[spiffeid.ID]*wit.RefreshingSource
}

// NewSVIDSource returns a source that asks c's issuer (c is copied; its Subject is
// replaced by each requested ID) and validates with bundles. opts configure the
// refreshing sources; the key algorithm is always ES256, the only one witsvid accepts
// among the issuer's (see the package documentation).
func NewSVIDSource(c *witissuer.Client, bundles witbundle.Source, opts ...wit.SourceOption) *SVIDSource {
	return &SVIDSource{
		client:  *c,
		bundles: bundles,
		opts:    append(append([]wit.SourceOption(nil), opts...), wit.WithKeyAlgorithm("ES256")),
		sources: map[spiffeid.ID]*wit.RefreshingSource{},
	}
}

// GetWITSVIDForID implements witsvid.Source. The SVID carries the WIT's private key
// (PrivateKey, a crypto.Signer) for proofs of possession.
func (s *SVIDSource) GetWITSVIDForID(id spiffeid.ID) (*witsvid.SVID, error) {
	ctx, cancel := context.WithTimeout(context.Background(), getTimeout)
	defer cancel()
	return s.get(ctx, id)
}

func (s *SVIDSource) get(ctx context.Context, id spiffeid.ID) (*witsvid.SVID, error) {
	if id.IsZero() {
		return nil, errcode.New(errcode.InvalidRequest, "no SPIFFE ID")
	}
	cred, err := s.source(id).Credential(ctx)
	if err != nil {
		return nil, err
	}
	svid, err := witsvid.ParseAndValidate(cred.WIT, s.bundles)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidSignature, err, "WIT from the issuer does not validate as a WIT-SVID (wit_sha256 %s)", tokenhash.Of(cred.WIT))
	}
	if svid.ID != id {
		return nil, errcode.New(errcode.InvalidClaim, "issuer certified %s, want %s", svid.ID, id)
	}
	svid.PrivateKey = cred.Key.Signer()
	return svid, nil
}

func (s *SVIDSource) source(id spiffeid.ID) *wit.RefreshingSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.sources[id]
	if !ok {
		c := s.client
		c.Subject = id.String()
		src = c.Source(s.opts...)
		s.sources[id] = src
	}
	return src
}
