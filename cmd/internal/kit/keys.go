package kit

import (
	"context"
	"log/slog"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
)

// RotationStepInterval is how often a service checks its key rotation schedule unless
// its configuration says otherwise.
const RotationStepInterval = 30 * time.Second

// OpenStoreOn opens the configured replay store (OpenStore) for s, which closes it.
// The store's readiness check (Redis answers PING), when it has one, is the one check
// returned: the first of the service's ready checks.
func OpenStoreOn(s *Server, sc StoreConfig, logger *slog.Logger) (store.Replay, []service.ReadyCheck, error) {
	replay, ready, closeStore, err := OpenStore(sc, logger)
	if err != nil {
		return nil, nil, err
	}
	s.OnClose(closeStore)
	var checks []service.ReadyCheck
	if ready != nil {
		checks = append(checks, ready)
	}
	return replay, checks, nil
}

// RotateKeys runs rot's rotation step every step until ctx ends; a failed step is
// logged, and the next one tries again.
func RotateKeys(ctx context.Context, rot *keys.Rotator, step time.Duration, logger *slog.Logger) {
	go rot.Run(ctx, Ticker(ctx, step), func(err error) {
		logger.Error("key rotation step failed", "error", err.Error())
	})
}
