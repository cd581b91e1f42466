package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
)

// Defaults of NewReplay.
const (
	DefaultPrefix  = "dialogtrust:replay:"
	DefaultTimeout = 500 * time.Millisecond
)

// Option configures NewReplay.
type Option func(*Replay)

// WithPrefix sets the prefix of every key the store writes. Brokers that must see each
// other's claims use the same prefix; unrelated deployments sharing one Redis use
// different ones. A prefix containing a Redis Cluster hash tag ("{...}") puts every
// claim into one slot, so one node carries all of the load.
func WithPrefix(prefix string) Option {
	return func(r *Replay) { r.prefix = prefix }
}

// WithTimeout bounds each Claim, including any retries the client makes. A value of
// zero or less keeps DefaultTimeout. go-redis applies a context deadline to its
// socket reads only when the client has ContextTimeoutEnabled (NewClient sets
// it); otherwise a hung server holds a claim for the client's ReadTimeout instead.
func WithTimeout(d time.Duration) Option {
	return func(r *Replay) {
		if d > 0 {
			r.timeout = d
		}
	}
}

// Replay is a store.Replay shared by every broker that uses the same Redis (a single node or a
// Cluster) and the same prefix. It is safe for concurrent use.
//
// A claim is one SET key value PX ttl NX (in the claim script below). Concurrent claims
// share round trips: they go to Redis together in one pipeline (see batch.go), each
// with its own reply, and an error of the pipeline refuses each of them. The value is
// random per claim, so that when
// the client retries a SET whose first reply was lost (go-redis retries after, for
// example, an EOF on a pooled connection, a Cluster client retries on another node,
// and the store itself once on a fresh connection when one it held failed: see
// heldconn.go), a "not set" that is really this claim's own earlier write is
// recognised instead of being reported as a replay.
//
// Data loss. A Redis that restarts without persistence (or is flushed, or evicts keys)
// forgets the claims it held, and every proof accepted before would be accepted once
// more. To notice, the keys are spread over LossTags hash tags ("{xx}", so that in a
// Cluster each tag is one slot) and each tag has an epoch key, written once with a
// random value; every claim runs as one script that checks, atomically on the slot's
// node, that the tag's epoch is still the one this broker saw last. When the epoch is
// gone (or replaced by a broker that knew nothing), the data was lost: the tag goes
// into quarantine, recorded in its epoch key so that every broker honours it, and its
// claims are refused ("could not be completed") until every claim that could have been
// made before the loss has expired (WithLossQuarantine). Then a new epoch starts.
//
// Every broker learns all the epochs at its first claim, so the loss is seen by any
// broker that was running across it. What this cannot see: a loss while no broker was
// running (a fresh broker cannot tell a new Redis from an emptied one), and a partial
// loss that keeps the epoch keys (an RDB snapshot or appendfsync everysec losing the
// last writes, a Cluster failover to a replica that lagged). Persistence with
// appendfsync always, or waiting for replicas, is what covers those (docs/operator.md,
// "Choosing a Redis deployment").
type Replay struct {
	client     redis.UniversalClient
	prefix     string
	timeout    time.Duration
	quarantine time.Duration
	now        func() time.Time
	newValue   func() string // a test hook; crypto/rand otherwise
	onLoss     func(LossEvent)
	acks       int           // WithReplicaAcks
	cluster    bool          // the client is a Cluster client
	ackTimeout time.Duration // WithReplicaAcks

	maxTTL atomic.Int64 // the longest claim seen, in ns: the quarantine is at least this
	// epochs[tag] is the epoch this broker saw last for the tag; nil until learned.
	epochs    [LossTags]atomic.Pointer[string]
	epochKeys [LossTags]string
	learned   atomic.Bool
	learnMu   sync.Mutex
	lastLearn atomic.Int64 // unix ns of the last attempt, to try at most once a second

	lanesMu sync.Mutex
	lanes   map[string]*batcher // by master address ("" for a single node); see lane
	held    *heldConns          // the claims' connections of a single node; see heldconn.go
	// batchHook, a test hook, hears the size of every batch before it is sent.
	batchHook func(n int)
}

var _ store.Replay = (*Replay)(nil)

// LossTags is the number of hash tags the claims are spread over, each with its epoch.
const LossTags = 256

// DefaultLossQuarantine covers every claim this project makes: proofs, assertions and
// grants live at most 5 minutes, plus clock skew.
const DefaultLossQuarantine = 6 * time.Minute

// WithLossQuarantine sets how long claims are refused after a data loss is seen: at
// least the longest time-to-live any broker sharing the prefix gives a claim, plus the
// clock difference between brokers. The store also never quarantines for less than the
// longest claim it has made itself. A value of zero or less keeps
// DefaultLossQuarantine.
func WithLossQuarantine(d time.Duration) Option {
	return func(r *Replay) {
		if d > 0 {
			r.quarantine = d
		}
	}
}

// WithClock sets the clock of NewReplay (default time.Now), which measures the
// quarantine. Time is an input: tests move it instead of sleeping. A nil clock keeps
// the default. Brokers compare a quarantine's end with their own clocks, which is why
// the quarantine should exceed the longest claim by the clock difference between them.
func WithClock(now func() time.Time) Option {
	return func(r *Replay) { r.now = now }
}

// NewReplay returns a Replay backed by client. The store does not close the client.
func NewReplay(client redis.UniversalClient, opts ...Option) *Replay {
	r := &Replay{client: client, prefix: DefaultPrefix, timeout: DefaultTimeout, quarantine: DefaultLossQuarantine,
		now: time.Now, newValue: rand.Text}
	for _, o := range opts {
		o(r)
	}
	if r.now == nil {
		r.now = time.Now
	}
	_, r.cluster = client.(*redis.ClusterClient)
	if single, ok := client.(*redis.Client); ok && r.acks == 0 {
		r.held = &heldConns{client: single}
	}
	// Built once: every claim names its tag's epoch key.
	for tag := range LossTags {
		r.epochKeys[tag] = r.prefix + "{" + hex.EncodeToString([]byte{byte(tag)}) + "}epoch"
	}
	return r
}

// Epoch values: "f:" a tag first used by a broker that knew nothing; "r:" a tag
// restarted at the end of a quarantine; "q:<until-unix-ms>:" a quarantine.
//
// claimScript: KEYS[1] the tag's epoch key, KEYS[2] the claim's key. ARGV[1] the epoch
// this broker knows ("" if none), ARGV[2] the claim's value, ARGV[3] its ttl in ms,
// ARGV[4] a fresh random value, ARGV[5] now (unix ms), ARGV[6] the quarantine in ms.
// It returns {1, epoch} claimed, {0, epoch} replayed, {-1, epoch} quarantined.
var claimScript = redis.NewScript(`
local e = redis.call('GET', KEYS[1])
local known = ARGV[1]
local now = tonumber(ARGV[5])
local function quarantine()
  e = 'q:' .. string.format('%d', now + tonumber(ARGV[6])) .. ':' .. ARGV[4]
  redis.call('SET', KEYS[1], e)
  return {-1, e}
end
if not e then
  if known ~= '' then return quarantine() end
  e = 'f:' .. ARGV[4]
  redis.call('SET', KEYS[1], e)
elseif string.sub(e, 1, 2) == 'q:' then
  local untilms = tonumber(string.match(e, '^q:(%d+):'))
  if untilms == nil or now < untilms then return {-1, e} end
  e = 'r:' .. ARGV[4]
  redis.call('SET', KEYS[1], e)
elseif known ~= '' and e ~= known and string.sub(e, 1, 2) == 'f:' then
  -- Replaced by a broker that knew nothing: the data was lost after this broker looked.
  return quarantine()
end
if redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3], 'NX') then return {1, e} end
if redis.call('GET', KEYS[2]) == ARGV[2] then return {1, e} end
return {0, e}
`)

// learnScript: KEYS[1] an epoch key, ARGV[1] a fresh random value. It returns the
// tag's epoch, starting one if there is none.
var learnScript = redis.NewScript(`
local e = redis.call('GET', KEYS[1])
if not e then
  e = 'f:' .. ARGV[1]
  redis.call('SET', KEYS[1], e)
end
return e
`)

// learn reads (or starts) every tag's epoch in one round trip, so that this broker
// knows all of them from its first claim and can see a later loss in any tag. It never
// fails a claim: a tag it could not read (a Cluster shard down at start) is learned by
// the first claim there, as the claim script adopts the epoch it finds, and the whole
// read is tried again at most once a second until it succeeds. A claim that finds
// another claim learning does not wait.
func (r *Replay) learn(ctx context.Context) {
	if r.learned.Load() || !r.learnMu.TryLock() {
		return
	}
	defer r.learnMu.Unlock()
	now := r.now().UnixNano()
	if last := r.lastLearn.Load(); r.learned.Load() || (last != 0 && now-last < int64(time.Second)) {
		return
	}
	r.lastLearn.Store(now)
	pipe := r.client.Pipeline()
	cmds := make([]*redis.Cmd, LossTags)
	for tag := range LossTags {
		cmds[tag] = learnScript.Eval(ctx, pipe, []string{r.epochKey(tag)}, r.newValue())
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	all := true
	for tag, c := range cmds {
		e, err := c.Text()
		if err != nil {
			all = false
			continue
		}
		// A claim may have taught this tag already; keep the newer knowledge.
		r.epochs[tag].CompareAndSwap(nil, &e)
	}
	r.learned.Store(all)
}

// Claim implements store.Replay.
func (r *Replay) Claim(ctx context.Context, key string, ttl time.Duration) error {
	if err := store.ValidateClaim(key, ttl); err != nil {
		return err
	}
	if r.acks > 0 && r.cluster {
		return unavailable(errors.New("replica acknowledgements (WAIT) need a single-node client, not a Cluster client"))
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	r.learn(ctx)
	for {
		old := r.maxTTL.Load()
		if int64(ttl) <= old || r.maxTTL.CompareAndSwap(old, int64(ttl)) {
			break
		}
	}
	quarantine := max(r.quarantine, time.Duration(r.maxTTL.Load())+time.Second)

	tag, k := r.keyTag(key)
	known := ""
	if e := r.epochs[tag].Load(); e != nil {
		known = *e
	}
	c := &pendingClaim{ctx: ctx, keys: []string{r.epochKey(tag), k}, done: make(chan struct{}),
		args: []any{known, r.newValue(), redisTTL(ttl).Milliseconds(), r.newValue(), r.now().UnixMilli(), quarantine.Milliseconds()}}
	if err := r.lane(ctx, c.keys[0]).do(c); err != nil {
		return unavailable(err)
	}
	res, err := c.res, c.err
	if err != nil {
		return unavailable(err)
	}
	if len(res) != 2 {
		return unavailable(errors.New("unexpected reply from the claim script"))
	}
	status, ok1 := res[0].(int64)
	epoch, ok2 := res[1].(string)
	if !ok1 || !ok2 {
		return unavailable(errors.New("unexpected reply from the claim script"))
	}
	r.epochs[tag].Store(&epoch)
	switch status {
	case 1:
		return nil
	case 0:
		return store.Replayed()
	default:
		until, ok := quarantineEnd(epoch)
		if r.onLoss != nil && epoch != known {
			// The first time this store sees this quarantine of this tag.
			r.onLoss(LossEvent{Tag: tag, Until: until})
		}
		when := "later"
		if ok {
			when = until.UTC().Format(time.RFC3339)
		}
		return errcode.Unavailable(errcode.StoreUnavailable, nil,
			"the replay store lost its data (a Redis restart without persistence?); claims are refused until %s, when every claim made before the loss has expired", when)
	}
}

// lane is the batcher of the node that holds key: the one node of a single Redis; in a
// Cluster the slot's master, so that a master that is slow or down holds up only its
// own claims, not the pipelines of the others.
func (r *Replay) lane(ctx context.Context, key string) *batcher {
	addr := ""
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		if node, err := cc.MasterForKey(ctx, key); err == nil {
			addr = node.Options().Addr
		}
	}
	r.lanesMu.Lock()
	defer r.lanesMu.Unlock()
	b := r.lanes[addr]
	if b == nil {
		if len(r.lanes) >= maxLanes {
			addr = "" // masters come and go; do not grow without bound
			if b = r.lanes[addr]; b != nil {
				return b
			}
		}
		if r.lanes == nil {
			r.lanes = map[string]*batcher{}
		}
		b = &batcher{exec: r.runBatch}
		r.lanes[addr] = b
	}
	return b
}

// maxLanes bounds the batchers of a Cluster client: one per master address seen.
const maxLanes = 64

// runBatch runs the claim script for every claim of batch in one pipeline (a Cluster
// client splits it by node) and finishes each claim with its own reply. An error of
// the whole pipeline (a timeout, a lost connection) is every claim's error, so that
// each is refused. With WithReplicaAcks the pipeline ends with one WAIT on the same
// connection, which covers every claim before it: fewer acknowledgements than
// required within the timeout refuse the whole batch.
func (r *Replay) runBatch(batch []*pendingClaim) {
	if r.batchHook != nil {
		r.batchHook(len(batch))
	}
	if len(batch) == 1 && r.acks == 0 {
		// Alone: one script call under the claim's own deadline, without a pipeline's
		// bookkeeping (Run loads the script on NOSCRIPT itself).
		c := batch[0]
		var res []any
		var err error
		r.onConn(c.ctx, func(conn claimConn, held bool) error {
			if !held {
				res, err = claimScript.Run(c.ctx, conn, c.keys, c.args...).Slice()
				return err
			}
			cmd := heldEvalSha(c.ctx, conn, c.keys, c.args)
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
				// A restarted server has no scripts (as Run does, in two steps).
				if lerr := claimScript.Load(c.ctx, conn).Err(); lerr != nil {
					res, err = nil, lerr
					return err
				}
				cmd = heldEvalSha(c.ctx, conn, c.keys, c.args)
			}
			res, err = cmd.Slice()
			return err
		})
		c.finish(res, err)
		return
	}
	// Shared: a deadline of the batch's own, so that no one caller's cancellation
	// fails the others' claims.
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	var wait *redis.Cmd
	exec := func(conn claimConn, held bool) error {
		pipe := conn.Pipeline()
		for i, c := range batch {
			if held {
				cmds[i] = heldEvalSha(ctx, pipe, c.keys, c.args)
			} else {
				cmds[i] = claimScript.EvalSha(ctx, pipe, c.keys, c.args...)
			}
		}
		if r.acks > 0 {
			wait = pipe.Do(ctx, "WAIT", r.acks, r.ackTimeout.Milliseconds())
		}
		_, err := pipe.Exec(ctx) // each command carries its own error as well
		return err
	}
	var loadErr error
	r.onConn(ctx, func(conn claimConn, held bool) error {
		loadErr = nil
		err := exec(conn, held)
		if err != nil && r.noScript(cmds) {
			// A restarted server has no scripts: load it (on every master of a
			// Cluster) and run the batch once more. A failed EVALSHA wrote nothing,
			// and one that succeeded finds its own value again (the claim's random
			// value), so running the whole batch again changes no outcome.
			if loadErr = claimScript.Load(ctx, r.client).Err(); loadErr != nil {
				return loadErr
			}
			err = exec(conn, held)
		}
		return err
	})
	if loadErr != nil {
		for _, c := range batch {
			c.finish(nil, loadErr)
		}
		return
	}
	if r.acks > 0 {
		if werr := r.waitError(wait); werr != nil {
			for _, c := range batch {
				c.finish(nil, werr)
			}
			return
		}
	}
	for i, c := range batch {
		c.finish(cmds[i].Slice())
	}
}

// noScript reports whether the server did not know the claim script for any of cmds.
func (r *Replay) noScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			return true
		}
	}
	return false
}

// waitError is nil when WAIT reported at least r.acks replicas.
func (r *Replay) waitError(wait *redis.Cmd) error {
	n, err := wait.Int64()
	if err != nil {
		return err
	}
	if n < int64(r.acks) {
		return fmt.Errorf("claim acknowledged by %d of the %d replicas required within %s", n, r.acks, r.ackTimeout)
	}
	return nil
}

// WithReplicaAcks makes each claim wait (Redis WAIT) until n replicas have it, at most
// timeout; fewer acknowledgements fail the claim closed. It closes the window of an
// asynchronous failover: a replica promoted after a claim was acknowledged holds it.
// Single node with replicas only (a Cluster client cannot run WAIT on the claim's
// connection: claims then fail with a configuration error). n <= 0 turns it off.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(r *Replay) {
		r.acks, r.ackTimeout = max(n, 0), timeout
		if r.ackTimeout <= 0 {
			r.ackTimeout = 100 * time.Millisecond
		}
	}
}

// quarantineEnd reads the end of a quarantine from its epoch value ("q:<unix ms>:...").
func quarantineEnd(epoch string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(epoch, "q:")
	if !ok {
		return time.Time{}, false
	}
	ms, _, ok := strings.Cut(rest, ":")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(n), true
}

// LossEvent reports that a tag of the store is in quarantine after a data loss: its
// claims are refused until Until.
type LossEvent struct {
	Tag   int
	Until time.Time
}

// WithLossHook calls hook the first time the store finds each tag in a quarantine (up
// to LossTags calls per loss), for a log line or a metric. hook must be fast.
func WithLossHook(hook func(LossEvent)) Option {
	return func(r *Replay) { r.onLoss = hook }
}

// keyTag maps a caller's key to its hash tag and the Redis key. The digest keeps keys
// short, keeps the senders' values out of Redis, and decides the tag, so a sender
// cannot choose the Cluster slot of its claims.
func (r *Replay) keyTag(key string) (int, string) {
	sum := sha256.Sum256([]byte(key))
	tag := int(sum[0])
	return tag, r.prefix + "{" + hex.EncodeToString(sum[:1]) + "}" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// key is keyTag's Redis key.
func (r *Replay) key(key string) string {
	_, k := r.keyTag(key)
	return k
}

// epochKey is the tag's epoch key, in the tag's slot.
func (r *Replay) epochKey(tag int) string { return r.epochKeys[tag] }

// redisTTL rounds ttl up to whole milliseconds, the unit of PX: rounding down could
// end a claim before the value it protects has expired, and go-redis would turn a
// sub-millisecond ttl into 1ms itself but log about it.
func redisTTL(ttl time.Duration) time.Duration {
	ms := ttl / time.Millisecond
	if ttl%time.Millisecond != 0 {
		ms++
	}
	if ms > math.MaxInt64/time.Millisecond {
		ms = math.MaxInt64 / time.Millisecond
	}
	return ms * time.Millisecond
}

func unavailable(err error) error {
	return errcode.Unavailable(errcode.StoreUnavailable, err, "redis replay claim failed")
}

// ParseAddrs splits a comma-separated list of host:port addresses, dropping
// blanks around and between them.
func ParseAddrs(s string) []string {
	var addrs []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// NewClient returns a client for a single Redis node (cluster false, exactly one
// address) or a Redis Cluster (cluster true, one or more seed addresses).
// Connections are plain TCP without authentication unless opts say otherwise
// (WithAuth, WithTLS).
//
// The mode is never inferred from the number of addresses: go-redis would make one
// address a plain client even for a Cluster (writes then fail with MOVED), and several
// addresses a Cluster client. No address, or several without cluster, is a
// configuration error; the returned client then fails every command with it, so a
// broker so configured rejects every claim (fails closed) and says why, instead of
// quietly talking to localhost:6379 or to the wrong kind of server.
//
// The client honours context deadlines on its sockets, so the store's per-call timeout
// holds even when a server stops answering.
func NewClient(addrs []string, cluster bool, opts ...ClientOption) redis.UniversalClient {
	switch {
	case len(addrs) == 0:
		return refusingClient("store: no Redis address given")
	case !cluster && len(addrs) > 1:
		return refusingClient("store: several Redis addresses given without cluster mode")
	}
	var conn connConfig
	for _, o := range opts {
		o(&conn)
	}
	o := &redis.UniversalOptions{
		Addrs:                 addrs,
		IsClusterMode:         cluster,
		ContextTimeoutEnabled: true,
		Protocol:              protocol,
	}
	conn.apply(o)
	return redis.NewUniversalClient(o)
}

func refusingClient(reason string) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{})
	c.AddHook(refuseHook{errors.New(reason)})
	return c
}

// refuseHook fails every command and dial of a client that must not be used.
type refuseHook struct{ err error }

func (h refuseHook) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return nil, h.err }
}

func (h refuseHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		cmd.SetErr(h.err)
		return h.err
	}
}

func (h refuseHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			cmd.SetErr(h.err)
		}
		return h.err
	}
}
