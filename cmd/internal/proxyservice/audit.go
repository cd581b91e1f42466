package proxyservice

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
)

// IngressAuditConfig is ingress.audit (issue 26; docs/operator.md "The audit trail"):
// the ingress writes one record per request it answers (dialog.WithAuditor, handler
// "ingress"), in the schema of the TTS's audit section, with checkpoints signed by
// KeyFile's key.
type IngressAuditConfig struct {
	kit.AuditConfig `yaml:",inline"`
	// KeyFile is the private JWK that signs the trail's checkpoints. Default: the
	// handoff section's key, the workload's own long-lived key, which its peers'
	// trust documents already list. The key of the workload's WIT is never used: it
	// changes with each WIT, and a checkpoint must verify long after.
	KeyFile string `yaml:"key_file"`
}

// checkIngressAudit checks ingress.audit, when there is one.
func checkIngressAudit(cfg *Config) error {
	a := cfg.Ingress.Audit
	if a == nil {
		return nil
	}
	if err := a.Check("ingress.audit"); err != nil {
		return err
	}
	if a.Sink == kit.AuditSinkRedis && cfg.Ingress.Store.Type != "redis" {
		return fmt.Errorf("ingress.audit.sink redis needs ingress.store.type redis: the stream lives in the store's Redis")
	}
	if a.KeyFile == "" && cfg.Handoff == nil {
		return fmt.Errorf("ingress.audit needs key_file (or the handoff section, whose key signs then): the key that signs its checkpoints")
	}
	if _, err := identifier.Parse(cfg.Workload.ID); err != nil {
		return fmt.Errorf("ingress.audit needs workload.id, the audience its records name: %w", err)
	}
	return nil
}

// ingressAudit opens ingress.audit's trail on st (the ingress's store) and returns the
// receiver's options that write to it (none without the section).
func ingressAudit(ctx context.Context, s *kit.Server, cfg *Config, st *kit.Store, logger *slog.Logger) ([]dialog.ReceiverOption, error) {
	a := cfg.Ingress.Audit
	if a == nil {
		return nil, nil
	}
	var key *keys.PrivateKey
	if a.KeyFile != "" {
		k, err := readPrivateKey(a.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("ingress.audit.key_file: %w", err)
		}
		key = k
	} else if cfg.Handoff != nil {
		key = cfg.Handoff.key
	}
	if key == nil {
		return nil, fmt.Errorf("ingress.audit: no key to sign checkpoints")
	}
	self, err := identifier.Parse(cfg.Workload.ID)
	if err != nil {
		return nil, fmt.Errorf("ingress.audit: workload.id: %w", err)
	}
	l, err := kit.OpenAudit(ctx, s, &a.AuditConfig, st, audit.FixedKey(key), nil, logger)
	if err != nil {
		return nil, err
	}
	logger.Info("ingress audit trail", "checkpoint_kid", key.KID(), "audience", self.String())
	return []dialog.ReceiverOption{dialog.WithAuditor(l, self), dialog.WithAuditHandler(audit.HandlerIngress)}, nil
}
