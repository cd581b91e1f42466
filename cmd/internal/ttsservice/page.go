package ttsservice

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// PageConfig is revocations.admin.page: the operator's page (package console) on the
// admin listener, beside the API. It is off unless enabled: a page with a cookie is a
// surface of its own, which an operator turns on knowingly. It reads the TTS's own
// audit section (file or redis sink; stdout cannot be read back).
type PageConfig struct {
	Enabled bool `yaml:"enabled"`
	// SessionTTL is how long a sign-in lasts (default console.DefaultSessionTTL).
	SessionTTL time.Duration `yaml:"session_ttl"`
	// MaxRecords is how many of the trail's latest records the page reads (default
	// console.DefaultMaxRecords).
	MaxRecords int `yaml:"max_records"`
}

const maxPageRecords = 100_000

func checkPage(a *RevocationsAdminConfig) error {
	p := a.Page
	if p == nil {
		return nil
	}
	if p.SessionTTL < 0 || p.SessionTTL > 7*24*time.Hour {
		return fmt.Errorf("revocations.admin.page.session_ttl must be at most 168h")
	}
	if p.MaxRecords < 0 || p.MaxRecords > maxPageRecords {
		return fmt.Errorf("revocations.admin.page.max_records must be at most %d", maxPageRecords)
	}
	if p.Enabled && a.URL != "" && !strings.HasSuffix(a.URL, revokeapi.Path) {
		return fmt.Errorf("revocations.admin.url must end in %s with the page: the page is beside the API", revokeapi.Path)
	}
	return nil
}

// pageLogins are the page's logins, when it is enabled: its base is the API's URL
// without revokeapi.Path (the admin listener as administrators reach it).
func pageLogins(a *RevocationsAdminConfig, apiURL string) (*console.Logins, error) {
	if a.Page == nil || !a.Page.Enabled {
		return nil, nil
	}
	base, ok := strings.CutSuffix(apiURL, revokeapi.Path)
	if !ok {
		return nil, fmt.Errorf("revocations.admin.url must end in %s with the page", revokeapi.Path)
	}
	l, err := console.NewLogins(base, console.WithSessionTTL(a.Page.SessionTTL))
	if err != nil {
		return nil, fmt.Errorf("revocations.admin.page: %w", err)
	}
	return l, nil
}

// sessionsOf is l as the API's Sessions (nil without the page: POST /admin/sessions is
// then no route).
func sessionsOf(l *console.Logins) revokeapi.Sessions {
	if l == nil {
		return nil
	}
	return l
}

// servePage is the admin listener's handler: the API alone, or the API and the page.
func servePage(api *revokeapi.Handler, logins *console.Logins, cfg *Config, st *kit.Store, logger *slog.Logger) (http.Handler, error) {
	if logins == nil {
		return api, nil
	}
	trail, note, err := kit.AuditTrail(cfg.Audit, st)
	if err != nil {
		return nil, fmt.Errorf("revocations.admin.page: %w", err)
	}
	page, err := console.New(console.Config{API: api, Logins: logins, Trail: trail, NoTrail: note,
		MaxRecords: cfg.Revocations.Admin.Page.MaxRecords, Logger: logger})
	if err != nil {
		return nil, err
	}
	logger.Info("operator's page", "url", logins.Origin()+console.Prefix, "trail", cfg.Audit != nil)
	return console.Routes(api, page), nil
}
