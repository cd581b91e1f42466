package kit

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
)

// RotationStepInterval is how often a service checks its key rotation schedule unless
// its configuration says otherwise.
const RotationStepInterval = 30 * time.Second

// KeysSpec is what a service's keys section opens apart from the section itself.
type KeysSpec struct {
	// Name names the service's ring in the shared key ring's Redis (keys.shared): "tts",
	// "wit-issuer".
	Name string
	// StateFile is the file in data_dir that holds the rotated keys.
	StateFile string
	// Retain is how long a retired key stays published: the longest lifetime of what
	// the service signs, plus the clock skew.
	Retain time.Duration
	// FileIgnoresPeriod: with signing_key_file, a rotation_period is ignored (the TTS:
	// the file's key is rotated by replacing the file) rather than refused (the WIT
	// issuer, keys.OpenRotator).
	FileIgnoresPeriod bool
	// Describe says where the keys live for the start log line, from the origin
	// keys.OpenRotator reports; the shared ring is "shared in redis".
	Describe func(origin keys.KeyOrigin, kc KeysConfig) string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Keys is an opened keys section: the Rotator, where its keys live, and its readiness
// checks (the shared ring's SharedKeysReady; none otherwise).
type Keys struct {
	Rotator *keys.Rotator
	From    string
	Ready   []service.ReadyCheck
	// Close releases what the keys hold (the PKCS#11 token); never nil.
	Close func()
	// Metrics are the keys' gauges (KeyMetrics), for the service's registry.
	Metrics []prometheus.Collector
}

// OpenKeys opens the keys section kc (keys.OpenRotator): the keys in a PKCS#11 token
// when kc.PKCS11 is set (OpenPKCS11Keys), the shared ring in the Redis of st when
// kc.Shared is set (OpenSharedKeys), else a fixed key from a file, the
// rotated keys of a data directory, or a key generated in memory (the service's checks
// decide where that is allowed). The JWKS cache time is set (jwks_max_age) and the
// rotation runs every kc.RotationStep() until ctx ends.
func OpenKeys(ctx context.Context, kc KeysConfig, st *Store, spec KeysSpec, logger *slog.Logger) (*Keys, error) {
	if spec.Now == nil {
		spec.Now = time.Now
	}
	now := spec.Now
	k := &Keys{Close: func() {}}
	var err error
	if kc.PKCS11 != nil {
		k.Rotator, k.From, k.Close, err = OpenPKCS11Keys(ctx, kc, spec.Name, kc.RotationStep(), spec.Retain, now)
		if err != nil {
			return nil, err
		}
		// Replicas share the token as they share keys.shared's ring: one that has not
		// listed it for long may miss a key the others sign with.
		k.Ready = append(k.Ready, SharedKeysReady(k.Rotator, now))
	} else if kc.Shared != nil {
		k.Rotator, k.From, err = OpenSharedKeys(ctx, kc, st, spec.Name, kc.RotationStep(), spec.Retain, now)
		if err != nil {
			return nil, err
		}
		k.Ready = append(k.Ready, SharedKeysReady(k.Rotator, now))
	} else if k.Rotator, k.From, err = OpenLocalKeys(kc, spec); err != nil {
		return nil, err
	}
	k.Rotator.Ring().SetMaxAge(kc.JWKSMaxAge)
	k.Metrics = KeyMetrics(k.Rotator, kc.RotationStep(), now)
	RotateKeys(ctx, k.Rotator, kc.RotationStep(), logger)
	return k, nil
}

// OpenLocalKeys opens the keys of a keys section without keys.shared
// (keys.OpenRotator): a fixed key from a file (no rotation), the rotated keys of a data
// directory (spec.StateFile in it), or a key generated in memory that dies with the
// process. The words say where they live (spec.Describe).
func OpenLocalKeys(kc KeysConfig, spec KeysSpec) (*keys.Rotator, string, error) {
	rc := keys.RotationConfig{Alg: kc.Alg, Period: kc.RotationPeriod, PublishDelay: kc.PublishDelay, Retain: spec.Retain, Now: spec.Now}
	if kc.SigningKeyFile != "" && spec.FileIgnoresPeriod {
		rc.Period = 0
	}
	r, origin, err := keys.OpenRotator(keys.KeySource{SigningKeyFile: kc.SigningKeyFile, DataDir: kc.DataDir, StateFile: spec.StateFile}, rc)
	if err != nil {
		return nil, "", err
	}
	return r, spec.Describe(origin, kc), nil
}

// RotateKeys runs rot's rotation step every step until ctx ends; a failed step is
// logged, and the next one tries again.
func RotateKeys(ctx context.Context, rot *keys.Rotator, step time.Duration, logger *slog.Logger) {
	go rot.Run(ctx, Ticker(ctx, step), func(err error) {
		logger.Error("key rotation step failed", "error", err.Error())
	})
}
