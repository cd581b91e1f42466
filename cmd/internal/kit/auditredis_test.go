package kit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// replicaAudit is replica i's audit log (writer tts-i) on the Redis stream under prefix,
// opened as the TTS opens it: its store, its server (closing it closes both).
func replicaAudit(t *testing.T, addr, prefix string, i int, k *keys.PrivateKey) (*audit.Log, *Server) {
	t.Helper()
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{addr}, Prefix: prefix}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	s.OnClose(st.Close)
	l, err := OpenAudit(context.Background(), s, &AuditConfig{Sink: AuditSinkRedis, Writer: fmt.Sprintf("tts-%d", i)}, st, audit.FixedKey(k), nil, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

// replicasStream closes the replicas' servers (their logs checkpoint and close), reads
// their stream under prefix back and verifies it with k: records records of two
// writers, each with its closing checkpoint. It returns the stream's entries; the
// stream is deleted at the test's end.
func replicasStream(t *testing.T, servers []*Server, addr, prefix string, k *keys.PrivateKey, records int) int {
	t.Helper()
	for _, s := range servers {
		s.Close()
	}
	stream := prefix + "audit"
	t.Cleanup(func() { delStream(addr, stream) })
	trail, entries := exportStream(t, addr, stream)
	rep := verifyStream(t, trail, k)
	if !rep.OK() || rep.Records != records || rep.Writers != 2 || rep.CheckpointsVerified != 2 {
		t.Fatalf("%+v", rep)
	}
	return entries
}

// Issue 26: replicas share one Redis stream, each a writer of its own chain in it; the
// stream, read back as the operator guide says (redis-cli XRANGE, the trail's lines
// kept), verifies against the replicas' key.
func TestIssue26AuditRedisStreamSharedByReplicas(t *testing.T) {
	addr := testkit.RedisAddr(t)
	prefix := fmt.Sprintf("audit-test-%d:", time.Now().UnixNano())
	k, _ := keys.Generate(keys.ES256)
	var logs []*audit.Log
	var servers []*Server
	for i := 0; i < 2; i++ {
		l, s := replicaAudit(t, addr, prefix, i, k)
		logs, servers = append(logs, l), append(servers, s)
	}
	for i := 0; i < 10; i++ {
		if err := logs[i%2].Append(&audit.Entry{Decision: audit.Issued, Txn: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	replicasStream(t, servers, addr, prefix, k, 10)
}

// A stream that does not answer is an error: the endpoint refuses the issuance.
func TestIssue26AuditRedisDownIsAnError(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{dead}, Timeout: 200 * time.Millisecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k, _ := keys.Generate(keys.ES256)
	l, err := OpenAudit(context.Background(), &Server{}, &AuditConfig{Sink: AuditSinkRedis}, st, audit.FixedKey(k), nil, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(&audit.Entry{Decision: audit.Issued}); err == nil {
		t.Fatal("a record the stream did not take was not an error")
	}
	if _, err := OpenAudit(context.Background(), &Server{}, &AuditConfig{Sink: AuditSinkRedis}, &Store{}, audit.FixedKey(k), nil, nil); err == nil {
		t.Fatal("the redis sink opened without a Redis store")
	}
}
