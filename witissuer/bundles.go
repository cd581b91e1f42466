package witissuer

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// BundleFile names the PEM file that holds the X.509 authorities of one trust domain.
type BundleFile struct {
	TrustDomain string
	Path        string
}

// FileBundles is an x509bundle.Source backed by PEM files, reloaded when they change.
// A reload that fails (a file half-written, unreadable or unparsable) keeps the bundles
// that were loaded before and is retried on the next check, so a bad write never leaves
// the issuer with no trust anchors, nor with a partial set.
type FileBundles struct {
	files []BundleFile
	set   atomic.Pointer[x509bundle.Set]

	mu     sync.Mutex
	stamps map[string]fileStamp
}

type fileStamp struct {
	mod  time.Time
	size int64
}

var _ x509bundle.Source = (*FileBundles)(nil)

// LoadFileBundles loads every file once; any failure is an error.
func LoadFileBundles(files []BundleFile) (*FileBundles, error) {
	seen := map[string]bool{}
	for _, f := range files {
		if _, err := spiffeid.TrustDomainFromString(f.TrustDomain); err != nil {
			return nil, fmt.Errorf("bundle for %q: %w", f.TrustDomain, err)
		}
		if seen[f.TrustDomain] {
			return nil, fmt.Errorf("two bundle files for trust domain %q", f.TrustDomain)
		}
		seen[f.TrustDomain] = true
	}
	b := &FileBundles{files: files, stamps: map[string]fileStamp{}}
	if _, err := b.Reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// GetX509BundleForTrustDomain implements x509bundle.Source.
func (b *FileBundles) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	return b.set.Load().GetX509BundleForTrustDomain(td)
}

// Reload reads every file now and, if all parse, replaces the bundles. It reports
// whether any file had changed since the last successful load.
func (b *FileBundles) Reload() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reloadLocked()
}

func (b *FileBundles) reloadLocked() (bool, error) {
	stamps := make(map[string]fileStamp, len(b.files))
	bundles := make([]*x509bundle.Bundle, 0, len(b.files))
	for _, f := range b.files {
		st, err := os.Stat(f.Path)
		if err != nil {
			return false, fmt.Errorf("bundle of %s: %w", f.TrustDomain, err)
		}
		raw, err := os.ReadFile(f.Path)
		if err != nil {
			return false, fmt.Errorf("bundle of %s: %w", f.TrustDomain, err)
		}
		bundle, err := x509bundle.Parse(spiffeid.RequireTrustDomainFromString(f.TrustDomain), raw)
		if err != nil {
			return false, fmt.Errorf("bundle of %s: %w", f.TrustDomain, err)
		}
		if bundle.Empty() {
			return false, fmt.Errorf("bundle of %s: no certificates in %s", f.TrustDomain, f.Path)
		}
		bundles = append(bundles, bundle)
		stamps[f.Path] = fileStamp{mod: st.ModTime(), size: st.Size()}
	}
	changed := len(stamps) != len(b.stamps)
	for p, s := range stamps {
		if b.stamps[p] != s {
			changed = true
		}
	}
	b.set.Store(x509bundle.NewSet(bundles...))
	b.stamps = stamps
	return changed, nil
}

// ReloadIfChanged reloads when a file's modification time or size differs from the last
// successful load (or the last load failed).
func (b *FileBundles) ReloadIfChanged() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.files {
		st, err := os.Stat(f.Path)
		if err != nil || b.stamps[f.Path] != (fileStamp{mod: st.ModTime(), size: st.Size()}) {
			return b.reloadLocked()
		}
	}
	return false, nil
}

// Watch calls ReloadIfChanged on every tick until ctx ends; report (may be nil) hears
// the outcome of each reload that changed something or failed. The ticker is passed in
// so that tests drive it.
func (b *FileBundles) Watch(ctx context.Context, tick <-chan time.Time, report func(changed bool, err error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			changed, err := b.ReloadIfChanged()
			if report != nil && (changed || err != nil) {
				report(changed, err)
			}
		}
	}
}
