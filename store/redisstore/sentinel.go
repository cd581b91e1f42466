package redisstore

import (
	"crypto/tls"

	"github.com/redis/go-redis/v9"
)

// Sentinel names a primary that Redis Sentinel watches: the master name the sentinels
// know it by, and the sentinels to ask for its address. Username and Password
// authenticate to the primary (and its replicas); SentinelUsername and
// SentinelPassword to the sentinels. Empty means no authentication. TLS, when not nil,
// is the TLS of every connection, to the sentinels and to the primary (as WithTLS: at
// least TLS 1.2; with an empty ServerName each is verified for its own host).
type Sentinel struct {
	MasterName       string
	Addrs            []string
	Username         string
	Password         string
	SentinelUsername string
	SentinelPassword string
	TLS              *tls.Config
}

// NewFailoverClient returns a client for the primary that the sentinels name (go-redis
// FailoverClient): it asks them for the primary's address and follows a failover
// without being restarted (the sentinels announce the new primary, and the client drops
// its connections to the old one). Every command goes to the primary, never to a
// replica, so that a claim is checked where it is written.
//
// A master name without sentinels, or sentinels without a master name, is a
// configuration error: like NewClient, the returned client then fails every command
// with it, so the store refuses every claim and says why.
//
// The client honours context deadlines on its sockets, as NewClient's does.
// WithReplicaAcks works with it: the claim and its WAIT are one pipeline on the
// primary's connection.
func NewFailoverClient(s Sentinel) redis.UniversalClient {
	switch {
	case s.MasterName == "":
		return refusingClient("store: Redis Sentinel without a master name")
	case len(s.Addrs) == 0:
		return refusingClient("store: Redis Sentinel without a sentinel address")
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            s.MasterName,
		SentinelAddrs:         s.Addrs,
		SentinelUsername:      s.SentinelUsername,
		SentinelPassword:      s.SentinelPassword,
		Username:              s.Username,
		Password:              s.Password,
		TLSConfig:             minTLS12(s.TLS),
		ContextTimeoutEnabled: true,
		Protocol:              protocol,
	})
}
