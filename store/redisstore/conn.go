package redisstore

import (
	"crypto/tls"

	"github.com/redis/go-redis/v9"
)

// ClientOption configures the connections of NewClient: how the client authenticates
// to Redis and whether it speaks TLS.
type ClientOption func(*connConfig)

type connConfig struct {
	username, password string
	tls                *tls.Config
}

// WithAuth makes the client authenticate every connection (AUTH, or HELLO with AUTH):
// as the ACL user username with password, or, with an empty username, with the
// password of requirepass (the default user). A refused password fails every command
// with Redis's WRONGPASS, which the stores report as store_unavailable (could not be
// completed); the password appears in no error.
func WithAuth(username, password string) ClientOption {
	return func(c *connConfig) { c.username, c.password = username, password }
}

// WithTLS makes the client speak TLS with cfg (go-redis dials with tls.Dial): the
// server is verified against cfg.RootCAs (nil: the system's roots) for cfg.ServerName,
// or, when that is empty, for the host of each address it dials (a Cluster's nodes and
// the primary a Sentinel names each by their own). cfg.Certificates is the client
// certificate of mutual TLS. The client never negotiates below TLS 1.2: a lower
// cfg.MinVersion is raised to it.
func WithTLS(cfg *tls.Config) ClientOption {
	return func(c *connConfig) { c.tls = minTLS12(cfg) }
}

// minTLS12 is a copy of cfg that accepts TLS 1.2 and later only; nil stays nil.
func minTLS12(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return nil
	}
	cfg = cfg.Clone()
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

func (c connConfig) apply(o *redis.UniversalOptions) {
	o.Username, o.Password, o.TLSConfig = c.username, c.password, c.tls
}
