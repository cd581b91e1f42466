package kit

import (
	"context"
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// RevocationsConfig is the revocations section of the TTS and of the proxy's ingress
// (issue 26): whether revocations are checked, and how old a checker's snapshot may be.
type RevocationsConfig struct {
	// Enabled checks revocations: the TTS refuses tokens in what is revoked, the
	// ingress requests.
	Enabled bool `yaml:"enabled"`
	// Bound is the operator's "refused everywhere within": how old a checker's
	// snapshot of the store may be (default revoke.DefaultBound). Changes arrive at
	// once by Redis pub/sub; the bound holds when a message is missed.
	Bound time.Duration `yaml:"bound"`
	// Prefix is the Redis key prefix of the revocations, the same at the TTS and at
	// every ingress of the trust domain whatever their store prefixes (default
	// redisstore.DefaultRevocationsPrefix).
	Prefix string `yaml:"prefix"`
}

// Check validates the section against the store it reads: revocations made at one
// service must reach the others, which only a shared store does, unless single is set
// (the TTS, whose admin API writes the store it reads).
func (rc RevocationsConfig) Check(section string, sc StoreConfig, single bool) error {
	if !rc.Enabled {
		return nil
	}
	if rc.Bound < 0 {
		return fmt.Errorf("%s.bound: negative", section)
	}
	if sc.Type != "redis" && !single {
		return fmt.Errorf("%s: revocations are made at the TTS and shared through Redis: store.type must be redis", section)
	}
	return nil
}

// Revocations is the section's revocation store: on Redis through its one client,
// under prefix (default redisstore.DefaultRevocationsPrefix, not the store's prefix:
// the TTS and the ingresses share revocations whatever their other state); in memory a
// store of this process only.
func (st *Store) Revocations(prefix string) revoke.Store {
	if st.client == nil {
		return revoke.NewMemory()
	}
	if prefix == "" {
		prefix = redisstore.DefaultRevocationsPrefix
	}
	return redisstore.NewRevocations(st.client, append(st.sc.Redis.options(), redisstore.WithPrefix(prefix))...)
}

// OpenRevocations returns the checker of rc over st's revocations (nil when the section
// is off) and starts it hearing the store's change notices until s stops.
func OpenRevocations(s *Server, st *Store, rc RevocationsConfig) (revoke.Store, *revoke.Checker, error) {
	if !rc.Enabled {
		return nil, nil, nil
	}
	rs := st.Revocations(rc.Prefix)
	var opts []revoke.Option
	if rc.Bound > 0 {
		opts = append(opts, revoke.WithBound(rc.Bound))
	}
	c := revoke.NewChecker(rs, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	s.OnClose(cancel)
	// A subscription that fails now (Redis down at start) leaves the bound's polling,
	// which always holds; every check fails closed until Redis answers.
	_ = c.Start(ctx)
	return rs, c, nil
}
