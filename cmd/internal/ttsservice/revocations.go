package ttsservice

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
)

// RevocationsConfig is the TTS's revocations section (issue 26): the checker's bound
// and the admin API's listener.
type RevocationsConfig struct {
	kit.RevocationsConfig `yaml:",inline"`
	Admin                 *RevocationsAdminConfig `yaml:"admin"`
}

// RevocationsAdminConfig is revocations.admin: the admin API on a listener of its own,
// never the token endpoint's.
type RevocationsAdminConfig struct {
	// Listen is the admin listener's host:port.
	Listen string `yaml:"listen"`
	// URL is the API's URL as administrators reach it: the audience of their
	// signatures (default: the listener's URL followed by /admin/revocations).
	URL string `yaml:"url"`
	// Administrators are the workloads allowed to use the API.
	Administrators []string `yaml:"administrators"`
	// TLS is the listener's certificate; with ClientCAFile, administrators may
	// authenticate with a workload identity certificate (mutual TLS).
	TLS          kit.CertFiles `yaml:"tls"`
	ClientCAFile string        `yaml:"client_ca_file"`
	// AllowedOrigins are browser origins allowed to call (the operator's page).
	AllowedOrigins []string `yaml:"allowed_origins"`
	// DefaultTTL is a revocation's lifetime when the request names none (default 24h;
	// at least the longest lifetime of a token that could be used in it).
	DefaultTTL time.Duration `yaml:"default_ttl"`
	// Page is the operator's page on this listener (page.go).
	Page *PageConfig `yaml:"page"`
}

// DefaultRevocationTTL is revocations.admin.default_ttl's default.
const DefaultRevocationTTL = 24 * time.Hour

func checkRevocations(cfg *Config) error {
	r := cfg.Revocations
	if r == nil {
		return nil
	}
	if err := r.Check("revocations", cfg.Store, true); err != nil {
		return err
	}
	a := r.Admin
	if a == nil {
		return nil
	}
	if !r.Enabled {
		return fmt.Errorf("revocations.admin: revocations.enabled is off")
	}
	if a.Listen == "" || len(a.Administrators) == 0 {
		return fmt.Errorf("revocations.admin: listen and administrators are required")
	}
	if err := a.TLS.Check(); err != nil {
		return fmt.Errorf("revocations.admin.%w", err)
	}
	if a.ClientCAFile != "" && a.TLS.CertFile == "" {
		return fmt.Errorf("revocations.admin.client_ca_file needs revocations.admin.tls")
	}
	if !cfg.Development && a.TLS.CertFile == "" && !kit.IsLoopback(a.Listen, "localhost") {
		return fmt.Errorf("revocations.admin: a listener off the loopback interface needs tls")
	}
	for _, s := range a.Administrators {
		if _, err := identifier.Parse(s); err != nil {
			return fmt.Errorf("revocations.admin.administrators %q: %w", s, err)
		}
	}
	return checkPage(a)
}

// openRevocations opens the checker the TTS consults and, when configured, serves the
// admin API on its own listener, its WIT + HTTP signature callers verified with the
// TTS's own WIT trust and replay store.
func openRevocations(s *kit.Server, st *kit.Store, cfg *Config, wits *wit.Validator, replay store.Replay, logger *slog.Logger) (*revoke.Checker, error) {
	if cfg.Revocations == nil {
		return nil, nil
	}
	rs, checker, err := kit.OpenRevocations(s, st, cfg.Revocations.RevocationsConfig)
	if err != nil || checker == nil || cfg.Revocations.Admin == nil {
		return checker, err
	}
	a := cfg.Revocations.Admin
	var tlsCfg *tls.Config
	var roots []*x509.Certificate
	if a.TLS.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(a.TLS.CertFile, a.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("revocations.admin.tls: %w", err)
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
		if a.ClientCAFile != "" {
			pemBytes, err := os.ReadFile(a.ClientCAFile)
			if err != nil {
				return nil, fmt.Errorf("revocations.admin.client_ca_file: %w", err)
			}
			if roots, err = parseCerts(pemBytes); err != nil {
				return nil, fmt.Errorf("revocations.admin.client_ca_file: %w", err)
			}
			// Requested, verified by the handler (wic): a caller may sign instead.
			tlsCfg.ClientAuth = tls.RequestClientCert
		}
	}
	var admins []identifier.ID
	for _, s := range a.Administrators {
		admins = append(admins, identifier.MustParse(s))
	}
	ttl := a.DefaultTTL
	if ttl == 0 {
		ttl = DefaultRevocationTTL
	}
	ln, err := net.Listen("tcp", a.Listen)
	if err != nil {
		return nil, fmt.Errorf("revocations.admin.listen: %w", err)
	}
	url := a.URL
	if url == "" {
		scheme := "http://"
		if tlsCfg != nil {
			scheme = "https://"
		}
		url = scheme + ln.Addr().String() + revokeapi.Path
	}
	logins, err := pageLogins(a, url)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	api, err := revokeapi.New(revokeapi.Config{
		Store:          rs,
		Signatures:     httpsig.NewVerifier(wits, httpsig.WithAudiences(url), httpsig.WithReplay(replay)),
		CertRoots:      roots,
		Admins:         admins,
		TrustDomains:   cfg.TrustDomains,
		AllowedOrigins: a.AllowedOrigins,
		DefaultTTL:     ttl,
		Logger:         logger,
		Sessions:       sessionsOf(logins),
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	h, err := servePage(api, logins, cfg, st, logger)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.HandleMoreOn(ln, tlsCfg, h, logger)
	logger.Info("revocations admin API", "url", url, "administrators", a.Administrators)
	return checker, nil
}

// parseCerts reads every CERTIFICATE block of a PEM file.
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no certificate")
	}
	return out, nil
}

// opened is what build opened before buildHandler: the server and the store section.
type opened struct {
	server *kit.Server
	store  *kit.Store
}

// revocations is openRevocations on what build opened (nil when buildHandler runs
// without build, as the configuration check does).
func (o *opened) revocations(cfg *Config, wits *wit.Validator, replay store.Replay, logger *slog.Logger) (*revoke.Checker, error) {
	if o == nil {
		return nil, nil
	}
	return openRevocations(o.server, o.store, cfg, wits, replay, logger)
}
