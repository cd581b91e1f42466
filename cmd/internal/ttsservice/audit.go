package ttsservice

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// checkAudit checks the audit section, when there is one.
func checkAudit(cfg *Config) error {
	if cfg.Audit == nil {
		return nil
	}
	if err := cfg.Audit.Check("audit"); err != nil {
		return err
	}
	if cfg.Audit.Sink == kit.AuditSinkRedis && cfg.Store.Type != "redis" {
		return fmt.Errorf("audit.sink redis needs store.type redis: the stream lives in the store's Redis")
	}
	return nil
}

// openAudit opens the audit trail of the token endpoint (issue 26): every issuance and
// refusal of the TTS and of identity chaining's AS A and AS B, which are handlers of
// the same endpoint, with checkpoints signed by the TTS's active key. It returns a nil
// Auditor without an audit section. The same trail receives the revocations admin
// API's changes (openRevocations).
func openAudit(ctx context.Context, s *kit.Server, cfg *Config, st *kit.Store, ring *keys.Ring, logger *slog.Logger) (oauth.Auditor, error) {
	l, err := kit.OpenAudit(ctx, s, cfg.Audit, st, ring, nil, logger)
	if err != nil || l == nil {
		return nil, err
	}
	if cfg.opened != nil {
		cfg.opened.audit = l // the revocations admin API writes its changes here too
	}
	return l, nil
}
