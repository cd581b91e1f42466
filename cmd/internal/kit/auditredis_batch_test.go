package kit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// exportStream reads a stream back as the operator guide says (redis-cli --raw
// XRANGE, the trail's lines kept; the client's XRANGE when redis-cli is absent) and
// returns the trail and the number of entries.
func exportStream(t *testing.T, addr, stream string) (*bytes.Buffer, int) {
	t.Helper()
	client, _ := RedisClient(RedisConfig{Addrs: []string{addr}})
	defer client.Close()
	msgs, err := client.XRange(context.Background(), stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var trail bytes.Buffer
	if cli, err := exec.LookPath("redis-cli"); err == nil {
		host, port, _ := net.SplitHostPort(addr)
		out, err := exec.Command(cli, "-h", host, "-p", port, "--raw", "XRANGE", stream, "-", "+").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, `{"v":1,`) {
				trail.WriteString(line + "\n")
			}
		}
	} else {
		for _, m := range msgs {
			trail.WriteString(m.Values["l"].(string) + "\n")
		}
	}
	return &trail, len(msgs)
}

func verifyStream(t *testing.T, trail *bytes.Buffer, k *keys.PrivateKey) *audit.Report {
	t.Helper()
	vs, _ := audit.Verifiers([]*keys.PublicKey{k.Public()})
	rep, err := audit.Verify([]audit.Input{{Name: "stream", R: trail}}, nil, vs)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Issue 26, the Redis sink's group commit: two replicas, each with 16 goroutines
// appending at once, share one stream; records of concurrent requests go in shared
// XADDs (fewer entries than records), and the export verifies: each writer's chain is
// in stream order, no record lost.
func TestIssue26AuditRedisGroupCommitKeepsChainOrder(t *testing.T) {
	addr := testkit.RedisAddr(t)
	prefix := fmt.Sprintf("audit-batch-%d:", time.Now().UnixNano())
	k, _ := keys.Generate(keys.ES256)
	var wg sync.WaitGroup
	var servers []*Server
	for i := range 2 {
		l, s := replicaAudit(t, addr, prefix, i, k)
		servers = append(servers, s)
		for range 16 {
			wg.Go(func() {
				for range 25 {
					if err := l.Append(&audit.Entry{Decision: audit.Issued, Txn: "t"}); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	entries := replicasStream(t, servers, addr, prefix, k, 800)
	if entries >= 800 {
		t.Fatalf("%d entries for 800 records: no XADD carried more than one", entries)
	}
}

func delStream(addr, stream string) {
	c, _ := RedisClient(RedisConfig{Addrs: []string{addr}})
	c.Del(context.Background(), stream)
	c.Close()
}

// cutProxy forwards TCP to Redis; armed, it breaks the connection carrying the next
// command: cutRequest forwards half of its octets (Redis never sees a whole
// command), dropReply forwards it whole and closes the client's side when Redis
// answers it, before the reply is copied back (Redis took it, the client does not know).
type cutProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32 // 0 none, 1 cutRequest, 2 dropReply

	mu    sync.Mutex
	conns []net.Conn
}

// closeAll closes the connections open now, as a Redis restart does.
func (p *cutProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

const (
	cutRequest = 1
	dropReply  = 2
)

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	defer c.Close()
	r, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer r.Close()
	p.mu.Lock()
	p.conns = append(p.conns, c, r)
	p.mu.Unlock()
	// dropping: the command now forwarded is the armed one; its reply (the first octets
	// Redis sends after it: Redis has then run the whole command, however many reads
	// it came in) is not copied back, and the client's side is closed instead.
	var dropping atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			if err != nil {
				return
			}
			if dropping.Load() {
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		switch p.mode.Swap(0) {
		case cutRequest:
			_, _ = r.Write(buf[:n/2])
			return
		case dropReply:
			dropping.Store(true)
		}
		if _, err := r.Write(buf[:n]); err != nil {
			return
		}
	}
}

// armingSink arms the proxy before a batch of n records.
type armingSink struct {
	audit.BatchSink
	p    *cutProxy
	n    int
	mode int32
}

func (a *armingSink) WriteBatch(lines [][]byte) error {
	if len(lines) == a.n {
		a.p.mode.Store(a.mode)
	}
	return a.BatchSink.WriteBatch(lines)
}

// holdingSink holds the next write until release is closed.
type holdingSink struct {
	audit.BatchSink
	mu               sync.Mutex
	entered, release chan struct{}
}

func (h *holdingSink) WriteBatch(lines [][]byte) error {
	h.mu.Lock()
	entered, release := h.entered, h.release
	h.entered, h.release = nil, nil
	h.mu.Unlock()
	if entered != nil {
		close(entered)
		<-release
	}
	return h.BatchSink.WriteBatch(lines)
}

// groupOfTen appends three records, then one held in the sink while ten more queue
// behind it, and releases them: the ten go in one batch. It returns the ten's errors.
func groupOfTen(t *testing.T, l *audit.Log, h *holdingSink) []error {
	t.Helper()
	for range 3 {
		if err := l.Append(&audit.Entry{Decision: audit.Issued, Txn: "before"}); err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	h.entered, h.release = make(chan struct{}), make(chan struct{})
	entered, release := h.entered, h.release
	h.mu.Unlock()
	first := make(chan error, 1)
	go func() { first <- l.Append(&audit.Entry{Decision: audit.Issued, Txn: "held"}) }()
	<-entered
	errs := make(chan error, 10)
	for range 10 {
		go func() { errs <- l.Append(&audit.Entry{Decision: audit.Issued, Txn: "batch"}) }()
	}
	for l.Waiting() < 10 {
		runtime.Gosched()
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	var out []error
	for range 10 {
		out = append(out, <-errs)
	}
	return out
}

func proxiedLog(t *testing.T, addr string, mode int32) (l *audit.Log, h *holdingSink, k *keys.PrivateKey, stream string) {
	t.Helper()
	p := newCutProxy(t, addr)
	prefix := fmt.Sprintf("audit-cut-%d:", time.Now().UnixNano())
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{p.ln.Addr().String()}, Prefix: prefix, Timeout: 2 * time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	rs, err := newRedisStreamSink(st, "")
	if err != nil {
		t.Fatal(err)
	}
	h = &holdingSink{BatchSink: &armingSink{BatchSink: rs, p: p, n: 10, mode: mode}}
	k, _ = keys.Generate(keys.ES256)
	l, err = audit.New(h, audit.FixedKey(k), audit.WithWriter("tts-0"), audit.WithLogger(slog.New(slog.NewJSONHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	stream = prefix + "audit"
	t.Cleanup(func() { delStream(addr, stream) })
	return l, h, k, stream
}

// refusedGroupThen: every record of a group of ten (the batch named what) is refused;
// then n records are taken, the log closes, and the stream is read back.
func refusedGroupThen(t *testing.T, l *audit.Log, h *holdingSink, addr, stream, what string, n int) *bytes.Buffer {
	t.Helper()
	for i, err := range groupOfTen(t, l, h) {
		if err == nil {
			t.Fatalf("record %d of the %s counted as taken", i, what)
		}
	}
	for range n {
		if err := l.Append(&audit.Entry{Decision: audit.Issued, Txn: "after"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	trail, _ := exportStream(t, addr, stream)
	return trail
}

// A batch whose XADD Redis never took whole (the connection cut in the middle of the
// command) refuses every issuance in it, leaves nothing of it in the stream, and the
// writer's chain goes on from the last record Redis took: the export verifies
// without a finding, with exactly the records whose issuance went ahead.
func TestIssue26AuditRedisCutBatchRefusesEveryRecord(t *testing.T) {
	addr := testkit.RedisAddr(t)
	l, h, k, stream := proxiedLog(t, addr, cutRequest)
	trail := refusedGroupThen(t, l, h, addr, stream, "cut batch", 2)
	if strings.Contains(trail.String(), `"txn":"batch"`) {
		t.Fatal("a record of the refused batch is in the stream")
	}
	if rep := verifyStream(t, trail, k); !rep.OK() || rep.Records != 6 || rep.CheckpointsVerified != 1 {
		t.Fatalf("%+v", rep)
	}
}

// A batch Redis took but whose reply was lost is refused too (the issuances do not
// go ahead: no token without a record known to be taken); its records stay in the
// stream, and the writer's next records take their numbers again. Verify then finds
// the writer's records repeated: audit_record_inserted (and, for the copies after
// the first, audit_record_reordered; the next checkpoint audit_checkpoint_mismatch):
// a finding, never a trail accepted as complete.
func TestIssue26AuditRedisLostReplyIsFound(t *testing.T) {
	addr := testkit.RedisAddr(t)
	l, h, k, stream := proxiedLog(t, addr, dropReply)
	trail := refusedGroupThen(t, l, h, addr, stream, "batch whose reply was lost", 10)
	if n := strings.Count(trail.String(), `"txn":"batch"`); n != 10 {
		t.Fatalf("%d records of the batch in the stream, want 10 (Redis took it)", n)
	}
	rep := verifyStream(t, trail, k)
	inserted := 0
	for _, f := range rep.Findings {
		switch f.Code {
		case errcode.AuditRecordInserted:
			inserted++
		case errcode.AuditRecordReordered, errcode.AuditCheckpointMismatch:
		default:
			t.Fatalf("finding %+v", f)
		}
	}
	if rep.OK() || inserted < 10 {
		t.Fatalf("%+v", rep)
	}
}

// The sink's held connection goes back to the pool after a pause: a connection Redis
// closed meanwhile (a restart, its idle timeout) is found by the pool's check, and
// the next record is taken, not refused.
func TestIssue26AuditRedisHeldConnectionAfterPause(t *testing.T) {
	addr := testkit.RedisAddr(t)
	p := newCutProxy(t, addr)
	prefix := fmt.Sprintf("audit-pause-%d:", time.Now().UnixNano())
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{p.ln.Addr().String()}, Prefix: prefix}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, err := newRedisStreamSink(st, "")
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	rs.now = func() time.Time { return clock }
	k, _ := keys.Generate(keys.ES256)
	l, err := audit.New(rs, audit.FixedKey(k), audit.WithWriter("tts-0"), audit.WithLogger(slog.New(slog.NewJSONHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	stream := prefix + "audit"
	defer delStream(addr, stream)
	if err := l.Append(&audit.Entry{Decision: audit.Issued}); err != nil {
		t.Fatal(err)
	}
	p.closeAll()
	clock = clock.Add(heldIdle + time.Millisecond)
	if err := l.Append(&audit.Entry{Decision: audit.Issued}); err != nil {
		t.Fatalf("the record after a pause was refused: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	trail, _ := exportStream(t, addr, stream)
	if rep := verifyStream(t, trail, k); !rep.OK() || rep.Records != 2 {
		t.Fatalf("%+v", rep)
	}
}
