package kit

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/tracing"
)

// DefaultShutdownTimeout bounds the graceful stop when the configuration does not.
const DefaultShutdownTimeout = 10 * time.Second

// Base is the part of the configuration file that both services have, with the same
// meaning. Each binary's Config inlines it (yaml:",inline"), so the members stay at
// the top of the file and the file format is the binary's as before.
type Base struct {
	Listen       string    `yaml:"listen"`
	Issuer       string    `yaml:"issuer"`
	TrustDomains []string  `yaml:"trust_domains"`
	Log          LogConfig `yaml:"log"`
	// Debug is off unless set: see DebugConfig.
	Debug DebugConfig `yaml:"debug"`
	// Tracing is OpenTelemetry export over OTLP/HTTP; off unless otlp_endpoint is set.
	Tracing         tracing.Config `yaml:"tracing"`
	Skew            time.Duration  `yaml:"skew"`
	ShutdownTimeout time.Duration  `yaml:"shutdown_timeout"`
}

// LogConfig: the slog level (debug, info, warn, error) and format.
type LogConfig struct {
	Level string `yaml:"level"`
	// Format is json (the default: one object a line, for log collectors) or text
	// (slog's key=value lines, for a terminal; `dialogtrust dev` picks it there).
	Format string `yaml:"format"`
	// IssuedLevel is the level of the line logged for every credential issued (the
	// TTS's "txn token issued", the WIT issuer's "wit issued"); "" is info. Set to
	// debug, with level info, it drops that line, one write system call per
	// credential, where the metrics suffice; refusals are logged as before.
	IssuedLevel string `yaml:"issued_level"`
}

// IssuedSlogLevel is IssuedLevel as an slog.Level.
func (l LogConfig) IssuedSlogLevel() (slog.Level, error) {
	var lv slog.Level
	if l.IssuedLevel == "" {
		return slog.LevelInfo, nil
	}
	if err := lv.UnmarshalText([]byte(l.IssuedLevel)); err != nil {
		return 0, fmt.Errorf("log.issued_level: %w", err)
	}
	return lv, nil
}

// ServiceBase returns b; through embedding it is a method of every binary's Config,
// which is how the runner finds the log level and the tracing overrides.
func (b *Base) ServiceBase() *Base { return b }

// SetDefaults sets what the configuration leaves out: the listen address and the skew
// are the binary's, the shutdown timeout DefaultShutdownTimeout.
func (b *Base) SetDefaults(listen string, skew time.Duration) {
	if b.Listen == "" {
		b.Listen = listen
	}
	if b.ShutdownTimeout <= 0 {
		b.ShutdownTimeout = DefaultShutdownTimeout
	}
	if b.Skew <= 0 {
		b.Skew = skew
	}
}

// Check makes the checks of the shared members that need nothing opened.
func (b *Base) Check() error {
	if len(b.TrustDomains) == 0 {
		return fmt.Errorf("trust_domains: at least one is required")
	}
	if _, err := b.Log.IssuedSlogLevel(); err != nil {
		return err
	}
	if err := b.Debug.Check(); err != nil {
		return err
	}
	return b.Tracing.Validate()
}

// baseOf is cfg's Base, or nil when its type does not inline one.
func baseOf(cfg any) *Base {
	if b, ok := cfg.(interface{ ServiceBase() *Base }); ok {
		return b.ServiceBase()
	}
	return nil
}
