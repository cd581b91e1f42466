package handoff

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// The delegate of the restart test runs in a separate process: this test binary,
// re-executed with delegateEnv set, running TestDelegateProcess. It reads one command
// per line on stdin and answers one JSON line on stdout; the parent kills it (no
// graceful shutdown) and starts a new one.
const (
	delegateEnv = "DIALOGTRUST_HANDOFF_DELEGATE_DIR"
	testRedis   = "DIALOGTRUST_TEST_REDIS"
)

type delegateCmd struct {
	Now     int64  `json:"now"`
	Handoff string `json:"handoff"`
	Accept  bool   `json:"accept"`
}

type delegateReply struct {
	Outcome  Outcome `json:"outcome"`
	Reason   Reason  `json:"reason,omitempty"`
	Reply    string  `json:"reply,omitempty"`
	Accepted string  `json:"accepted,omitempty"`
	StopWork bool    `json:"stop_work,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// TestDelegateProcess is the delegate process, not a test of its own.
func TestDelegateProcess(t *testing.T) {
	dir := os.Getenv(delegateEnv)
	if dir == "" {
		t.Skip("the delegate of TestSec5_2_RecordsSurviveRestartRedis; runs only as its child process")
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	trust, err := ParseTrust(read("trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := keys.ParsePrivateJWK(read("coder.jwk"))
	if err != nil {
		t.Fatal(err)
	}
	var recs store.Records
	memory := false
	if addr := os.Getenv(testRedis); addr != "" && os.Getenv("DELEGATE_MEMORY") == "" {
		client := redisstore.NewClient([]string{addr}, false)
		defer client.Close()
		recs = redisstore.NewRecords(client, redisstore.WithPrefix(string(read("prefix"))))
	} else {
		recs, memory = store.NewMemoryRecords(), true
	}
	var now time.Time
	clock := func() time.Time { return now }
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	var r *Receiver
	for in.Scan() {
		var cmd delegateCmd
		if err := json.Unmarshal(in.Bytes(), &cmd); err != nil {
			t.Fatal(err)
		}
		now = time.Unix(cmd.Now, 0)
		if r == nil {
			opts := []ReceiverOption{WithClock(clock), WithStatusKey(key)}
			if memory {
				// Memory records were lost when this process started (section 8.4).
				opts = append(opts, WithRecordsLostAt(now))
			}
			r = NewReceiver(coder, trust, recs, opts...)
		}
		h, err := ParseHandoffJSON([]byte(cmd.Handoff), 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Receive(context.Background(), Inbound{Handoff: h, AuthenticatedSender: planner})
		rep := delegateReply{Outcome: d.Outcome, Reason: d.Reason, StopWork: d.StopWork}
		if err != nil {
			rep.Error = err.Error()
		}
		if d.Reply != nil {
			rep.Reply = d.Reply.Text()
		}
		if cmd.Accept && d.Outcome == OutcomeAccepted {
			s, err := r.Accept(context.Background(), planner, d.Offer.Hop)
			if err != nil {
				t.Fatal(err)
			}
			rep.Accepted = s.Text()
		}
		if err := out.Encode(rep); err != nil {
			t.Fatal(err)
		}
	}
}

// delegateProc is one run of the delegate process.
type delegateProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startDelegate(t *testing.T, dir string, env ...string) *delegateProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDelegateProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), delegateEnv+"="+dir), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &delegateProc{cmd: cmd, in: in, out: bufio.NewScanner(stdout)}
	p.out.Buffer(make([]byte, 1<<20), 1<<20)
	t.Cleanup(p.kill)
	return p
}

func (p *delegateProc) send(t *testing.T, c delegateCmd) delegateReply {
	t.Helper()
	b, _ := json.Marshal(c)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	for p.out.Scan() {
		var r delegateReply
		if json.Unmarshal(p.out.Bytes(), &r) == nil && r.Outcome != "" {
			return r
		}
	}
	t.Fatalf("delegate process ended: %v", p.out.Err())
	return delegateReply{}
}

// kill stops the process abruptly, as a crash would.
func (p *delegateProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// Section 5.2: "A delegate that has answered an offer or taken the work SHOULD also keep
// the pair, the digest, and the last status it sent, in storage that survives a
// restart." With Redis records, the delegate process is killed and started again, and
// still answers a retransmission with the identical octets of its last status (after
// exp), and still detects equivocation on the hop it took. With memory records the
// restarted process has forgotten, and applies section 8.4 instead.
func TestSec5_2_RecordsSurviveRestartRedis(t *testing.T) {
	addr := os.Getenv(testRedis)
	if addr == "" {
		testkit.PeerMissing(t, "%s is not set; skipping the restart test against a real redis-server", testRedis)
	}
	w := newWorld(t, JWS)
	dir := t.TempDir()
	prefix := "dialogtrust-test:" + rand.Text() + ":handoff:"
	client := redisstore.NewClient([]string{addr}, false)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			client.Unlink(ctx, iter.Val())
		}
		client.Close()
	})
	if err := client.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis at %s: %v", addr, err)
	}
	coderKey, _ := json.Marshal(w.key(coder))
	trustDoc := map[string]any{}
	for _, id := range []string{planner, coder} {
		pub, _ := json.Marshal(w.key(id).Public())
		trustDoc[id] = map[string]any{"keys": []json.RawMessage{pub}}
	}
	trustJSON, _ := json.Marshal(trustDoc)
	for name, b := range map[string][]byte{"trust.json": trustJSON, "coder.jwk": coderKey, "prefix": []byte(prefix)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := w.newOffer(planner, coder)
	h := &Handoff{Offer: w.sign(o)}
	hj, _ := h.MarshalJSON()
	o2 := *o
	o2.Task = String("equivocating")
	h2 := &Handoff{Offer: w.sign(&o2)}
	h2j, _ := h2.MarshalJSON()
	now := o.Iat

	// First process: receives, accepts, and is killed.
	p1 := startDelegate(t, dir)
	r := p1.send(t, delegateCmd{Now: now, Handoff: string(hj), Accept: true})
	if r.Outcome != OutcomeAccepted || r.Accepted == "" {
		t.Fatalf("first process: %+v", r)
	}
	p1.kill()

	// Second process, after exp: the retransmission gets the same "accepted" octets.
	later := o.Exp + 600
	p2 := startDelegate(t, dir)
	r2 := p2.send(t, delegateCmd{Now: later, Handoff: string(hj)})
	if r2.Outcome != OutcomeRetransmission || r2.Reply != r.Accepted {
		t.Fatalf("after restart: %+v, want the identical accepted status", r2)
	}
	// And equivocation on the hop it took is still detected: no status, stop the work.
	r3 := p2.send(t, delegateCmd{Now: later, Handoff: string(h2j)})
	if r3.Outcome != OutcomeEquivocation || r3.Reply != "" || !r3.StopWork {
		t.Fatalf("equivocation after restart: %+v", r3)
	}
	p2.kill()

	// The same restart with memory records: the hop is forgotten.
	p3 := startDelegate(t, dir, "DELEGATE_MEMORY=1")
	r4 := p3.send(t, delegateCmd{Now: later, Handoff: string(hj)})
	if r4.Outcome != OutcomeRejected || r4.Reason != ReasonStale {
		t.Fatalf("memory records after restart: %+v", r4)
	}
	p3.kill()
	p4 := startDelegate(t, dir, "DELEGATE_MEMORY=1")
	r5 := p4.send(t, delegateCmd{Now: now + 1, Handoff: string(hj)})
	if r5.Outcome != OutcomeRejected || r5.Reason != ReasonReplay {
		t.Fatalf("memory records, restart before exp (section 8.4): %+v", r5)
	}
}
