package ttsservice

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// BenchmarkIssueAuditRedisCPU: the server CPU per token of the audit trail's sinks at
// the TTS (issue 26: at most 10% more), the TTS built as main builds it (its
// configuration, buildHandler, kit.OpenAudit) with store.type redis, which the redis
// sink needs, in five sides: no audit section, `sink: file`, `sink: redis` (the
// group-committed stream sink), the Redis sink before group commit (unbatched: one
// XADD per record through the pool, under the Log's lock), and the floor of a record
// sent alone (one bare XADD per token on a held connection, no record built). conc goroutines serve tokens at once (1: one request
// at a time; 4, 16, 64: a loaded TTS), through the handler (httptest, WPT proofs minted
// and requests built before the clock). Each iteration is a round of conc × 8 tokens
// on each side, the sides' order rotating; a round's CPU is the process's (getrusage:
// every thread, go-redis's and the runtime's, and the kernel's loopback work):
//
//	DIALOGTRUST_TEST_REDIS=127.0.0.1:6379 go test -run '^$' -bench IssueAuditRedisCPU -benchtime 100x -count 3 ./cmd/internal/ttsservice/
//
// It reports each side's CPU per token (mean; and the median round), file-% and
// redis-% (100 × with / without, means and medians), and records per XADD.
func BenchmarkIssueAuditRedisCPU(b *testing.B) {
	addr := testkit.RedisAddr(b)
	for _, conc := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) { benchIssueAuditRedis(b, addr, conc) })
	}
}

const auditBenchPerWorker = 8

type auditBenchSide struct {
	prepare func() (*http.Request, *httptest.ResponseRecorder)
	serve   func(*http.Request, *httptest.ResponseRecorder)
	cpu     []time.Duration
}

func benchIssueAuditRedis(b *testing.B, addr string, conc int) {
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	witKey, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(witKey.Public())
	jwks, _ := set.MarshalJSON()
	jwksFile := testkit.WriteTemp(b, "a.jwks.json", string(jwks))
	id := identifier.MustParse("wimse://a.example/agent/a1")
	wkey, _ := keys.Generate(keys.ES256)
	witRaw, _, err := wit.NewIssuer("https://wit.a.example", func() *keys.PrivateKey { return witKey }).Issue(id, wkey.Public(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	prefix := fmt.Sprintf("audit-bench-%d:", time.Now().UnixNano())
	file := testkit.WriteTemp(b, "tts.yaml", `development: true
listen: 127.0.0.1:0
trust_domains: [a.example]
wits:
  - {trust_domain: a.example, jwks_file: `+jwksFile+`}
subject_tokens:
  self_signed: {enabled: true}
policy:
  rules:
    - workload: "wimse://a.example/"
store:
  type: redis
  redis: {addrs: ["`+addr+`"], prefix: "`+prefix+`"}
`)
	ttsKey, _ := keys.Generate(keys.ES256)
	const issuer = "http://tts.a.example"
	endpoint := issuer + tts.PathToken
	subject, err := txntoken.NewSelfSignedToken(wkey, id, "alice@a.example", issuer, "trip.read", time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	body := url.Values{"grant_type": {oauth.GrantTypeTokenExchange}, "requested_token_type": {oauth.TokenTypeTxnToken},
		"audience": {"a.example"}, "scope": {"trip.read"}, "subject_token": {subject}, "subject_token_type": {oauth.TokenTypeSelfSigned},
		"request_details": {`{"dlg":"7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"}`}}.Encode()
	var stream string
	// side builds a TTS with the audit section ac; or, with ac nil, an audit.Log on
	// the sink before group commit (xaddSink, unbatched), for the before/after ratio,
	// or an Auditor that only sends one XADD of a fixed line on a held connection
	// (floorAuditor, floor), a record's round trip and nothing else.
	side := func(ac *kit.AuditConfig, variant string) *auditBenchSide {
		cfg, _, err := configSpec.Load([]string{"--config", file}, nil, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		if err := validate(cfg); err != nil {
			b.Fatal(err)
		}
		cfg.Audit = ac
		s := &kit.Server{}
		b.Cleanup(s.Close)
		st, err := kit.OpenStoreOn(s, cfg.Store, logger)
		if err != nil {
			b.Fatal(err)
		}
		ring := keys.NewRing(ttsKey, time.Now)
		auditor, err := openAudit(ctx, s, cfg, st, ring, logger)
		if err != nil {
			b.Fatal(err)
		}
		if variant != "" {
			c, err := kit.RedisClient(cfg.Store.Redis)
			if err != nil {
				b.Fatal(err)
			}
			key := prefix + variant
			s.OnClose(func() { c.Del(context.Background(), key); c.Close() })
			if variant == "unbatched" {
				l, err := audit.New(xaddSink{c, key}, ring, audit.WithCheckpointInterval(time.Second), audit.WithLogger(logger))
				if err != nil {
					b.Fatal(err)
				}
				s.OnClose(func() { _ = l.Close() })
				auditor = l
			} else {
				conn := c.(*redis.Client).Conn()
				s.OnClose(func() { conn.Close() })
				line, _ := json.Marshal(audit.Entry{Decision: audit.Issued, Handler: "tts", Txn: "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", Requester: "wimse://a.example/agent/a1"})
				auditor = &floorAuditor{conn: conn, key: key, line: line}
			}
		}
		h, err := buildHandler(ctx, cfg, logger, issuer, ring, st.Replay, nil, nil, auditor)
		if err != nil {
			b.Fatal(err)
		}
		if ac != nil && ac.Sink == kit.AuditSinkRedis {
			stream = prefix + "audit"
			s.OnClose(func() {
				c, _ := kit.RedisClient(cfg.Store.Redis)
				c.Del(context.Background(), stream)
				c.Close()
			})
		}
		bs := &auditBenchSide{cpu: make([]time.Duration, b.N)}
		bs.prepare = func() (*http.Request, *httptest.ResponseRecorder) {
			proof, err := wpt.New(wkey, witRaw, endpoint, wpt.Bound{})
			if err != nil {
				b.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			wpt.Attach(req, witRaw, proof)
			return req, httptest.NewRecorder()
		}
		bs.serve = func(req *http.Request, rec *httptest.ResponseRecorder) {
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Errorf("%d %s", rec.Code, rec.Body)
			}
		}
		bs.serve(bs.prepare()) // warms the WIT and subject caches
		return bs
	}
	none := side(nil, "")
	file1 := side(&kit.AuditConfig{Sink: kit.AuditSinkFile, Path: filepath.Join(b.TempDir(), "a.log"), CheckpointInterval: time.Second}, "")
	redis1 := side(&kit.AuditConfig{Sink: kit.AuditSinkRedis, CheckpointInterval: time.Second}, "")
	before := side(nil, "unbatched")
	floor := side(nil, "floor")
	sides := []*auditBenchSide{none, file1, redis1, before, floor}
	n := conc * auditBenchPerWorker
	round := func(s *auditBenchSide) time.Duration {
		reqs, recs := make([]*http.Request, n), make([]*httptest.ResponseRecorder, n)
		for i := range reqs {
			reqs[i], recs[i] = s.prepare()
		}
		var wg sync.WaitGroup
		c0 := processCPU()
		for w := range conc {
			wg.Go(func() {
				for i := w; i < n; i += conc {
					s.serve(reqs[i], recs[i])
				}
			})
		}
		wg.Wait()
		return processCPU() - c0
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range sides {
			s := sides[(i+k)%len(sides)]
			s.cpu[i] = round(s)
		}
	}
	b.StopTimer()
	mean := func(s *auditBenchSide) float64 {
		var t time.Duration
		for _, d := range s.cpu {
			t += d
		}
		return float64(t.Nanoseconds()) / float64(b.N*n)
	}
	med := func(s *auditBenchSide) float64 {
		c := slices.Clone(s.cpu)
		slices.Sort(c)
		return float64(c[len(c)/2].Nanoseconds()) / float64(n)
	}
	b.ReportMetric(mean(none), "without-cpu-ns/token")
	b.ReportMetric(mean(file1), "file-cpu-ns/token")
	b.ReportMetric(mean(redis1), "redis-cpu-ns/token")
	b.ReportMetric(100*mean(file1)/mean(none), "file-cpu-%")
	b.ReportMetric(100*mean(redis1)/mean(none), "redis-cpu-%")
	b.ReportMetric(100*med(file1)/med(none), "file-cpu-median-%")
	b.ReportMetric(100*med(redis1)/med(none), "redis-cpu-median-%")
	b.ReportMetric(mean(before), "unbatched-cpu-ns/token")
	b.ReportMetric(100*mean(before)/mean(none), "unbatched-cpu-%")
	b.ReportMetric(100*med(before)/med(none), "unbatched-cpu-median-%")
	b.ReportMetric(100*mean(floor)/mean(none), "floor-cpu-%")
	b.ReportMetric(100*med(floor)/med(none), "floor-cpu-median-%")
	c, _ := kit.RedisClient(kit.RedisConfig{Addrs: []string{addr}})
	defer c.Close()
	if entries, err := c.XLen(ctx, stream).Result(); err == nil && entries > 0 {
		b.ReportMetric(float64(b.N*n+1)/float64(entries), "records/xadd")
	}
	b.ReportMetric(0, "ns/op")
}

// xaddSink is the Redis sink before group commit: one XADD per line through the
// client's pool, under the Log's lock (BenchmarkIssueAuditRedisCPU's "before").
type xaddSink struct {
	c   redis.UniversalClient
	key string
}

func (x xaddSink) Write(line []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return x.c.XAdd(ctx, &redis.XAddArgs{Stream: x.key, Values: []any{"l", line[:len(line)-1]}}).Err()
}

// floorAuditor sends one XADD of a fixed line per token on a held connection, the
// round trip of a lone record without the record (BenchmarkIssueAuditRedisCPU's
// floor); requests take turns on the connection.
type floorAuditor struct {
	mu   sync.Mutex
	conn *redis.Conn
	key  string
	line []byte
}

func (f *floorAuditor) Audit(*oauth.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return f.conn.XAdd(ctx, &redis.XAddArgs{Stream: f.key, Values: []any{"l", f.line}}).Err()
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
