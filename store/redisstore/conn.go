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

// protocol is the RESP version of every client this package builds (NewClient,
// NewFailoverClient): RESP2, not go-redis's default RESP3. The stores use only plain
// commands, scripts and pipelines; nothing here needs RESP3's push messages (no
// client-side caching, no Pub/Sub, no maintenance notifications). With RESP3, go-redis
// drains pending push messages before every command, and on a connection that has
// not been back in its pool for 5 s, as a connection the store holds never is
// (heldconn.go), that drain peeks the socket with a recvfrom system call each time:
// the call the held connections are there to save (measured: 10 608 recvfrom calls
// in an 8 s run of 24 000 claims with RESP3, 31 with RESP2; docs/performance.md).
const protocol = 2

func (c connConfig) apply(o *redis.UniversalOptions) {
	o.Username, o.Password, o.TLSConfig = c.username, c.password, c.tls
}
