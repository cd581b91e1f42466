package tts

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// revocationWorld is one trust domain's processes sharing one Redis for revocations:
// each process has its own client (its own connections, its own pub/sub), store and
// checker, as separate processes would.
type revocationWorld struct {
	t      *testing.T
	e      *env
	addr   string
	prefix string
	bound  time.Duration
	ctx    context.Context
}

func (rw *revocationWorld) process() (*redisstore.Revocations, *revoke.Checker) {
	rw.t.Helper()
	client := redisstore.NewClient([]string{rw.addr}, false)
	rw.t.Cleanup(func() { client.Close() })
	s := redisstore.NewRevocations(client, redisstore.WithPrefix(rw.prefix), redisstore.WithClock(rw.e.clock.Now))
	c := revoke.NewChecker(s, revoke.WithClock(rw.e.clock.Now), revoke.WithBound(rw.bound))
	if err := c.Start(rw.ctx); err != nil {
		rw.t.Fatal(err)
	}
	return s, c
}

// ttsReplica is another instance of e's TTS (same issuer, keys, policy, replay store)
// with the checker of its own process.
func (rw *revocationWorld) ttsReplica() http.Handler {
	rw.t.Helper()
	_, c := rw.process()
	cfg := rw.e.srv.cfg
	cfg.Registry, cfg.Logger, cfg.Revocations = nil, slog.New(slog.DiscardHandler), c
	s, err := New(cfg)
	if err != nil {
		rw.t.Fatal(err)
	}
	return s.Handler()
}

// receiver is a dialog.Receiver of its own process at a server of its own: behind an
// ingress (proxy.Ingress before an application) or in the application itself.
func (rw *revocationWorld) receiver(ingress bool) (string, *atomic.Int32) {
	rw.t.Helper()
	_, c := rw.process()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/task"
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(rw.e.wits, httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory(store.WithClock(rw.e.clock.Now))), httpsig.WithClock(rw.e.clock.Now))),
		dialog.WithTxnTokens(rw.e.verifier(tdA)),
		dialog.RequireTxnToken(),
		dialog.WithRevocations(c))
	if err != nil {
		rw.t.Fatal(err)
	}
	calls := new(atomic.Int32)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	if ingress {
		appSrv := httptest.NewServer(app)
		rw.t.Cleanup(appSrv.Close)
		in, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: appSrv.URL, AllowPlainHTTP: true})
		if err != nil {
			rw.t.Fatal(err)
		}
		srv.Config.Handler = in
	} else {
		srv.Config.Handler = rc.Middleware(app)
	}
	srv.Start()
	rw.t.Cleanup(srv.Close)
	return url, calls
}

// Issue 26 acceptance: a revocation with three TTS replicas, two ingresses and a
// dialog.Receiver sharing Redis. Once the bound has passed after the revocation (the
// clock moved, nothing waited for), every new token in the dialog (first issuance and
// replacement) is refused at every replica, and every request in it at every receiver;
// another dialog goes on. Then every process restarts (new clients, stores, checkers
// and replicas): nothing is forgotten. Needs a real redis-server
// (DIALOGTRUST_TEST_REDIS); under CI=true its absence fails.
func TestIssue26_RevocationAcrossReplicasRedis(t *testing.T) {
	addr := testkit.RedisAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := "dialogtrust-test:revoke:" + rand.Text() + ":"
	cleanup := redisstore.NewClient([]string{addr}, false)
	t.Cleanup(func() {
		keys, _ := cleanup.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			cleanup.Del(context.Background(), keys...)
		}
		cleanup.Close()
	})
	const bound = 3 * time.Second
	rw := &revocationWorld{t: t, addr: addr, prefix: prefix, bound: bound, ctx: ctx}
	rw.e = newEnv(t, func(e *env, c *Config) {
		rw.e = e
		_, c.Revocations = rw.process()
	})
	replicas := []http.Handler{rw.e.srv.Handler(), rw.ttsReplica(), rw.ttsReplica()}
	a1 := rw.e.workload("/agent/a1")

	// token asks replica i (behind the env's one URL) for a token in dlg.
	token := func(i int, dlg string, subject string) (string, error) {
		rw.e.hs.Config.Handler = replicas[i]
		r := txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: subject, SubjectTokenType: TokenTypeTxnToken}
		if subject == "" {
			r = txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: rw.e.accessToken("alice", "trip.read", 0),
				SubjectTokenType: TokenTypeAccessToken, Dialog: dlg}
		}
		resp, err := rw.e.request(a1, r)
		if err != nil {
			return "", err
		}
		return resp.AccessToken, nil
	}
	type target struct {
		url   string
		calls *atomic.Int32
	}
	var targets []target
	for _, ingress := range []bool{true, true, false} {
		url, calls := rw.receiver(ingress)
		targets = append(targets, target{url, calls})
	}
	call := func(tg target, dlg, tok string) errcode.Code {
		t.Helper()
		req, _ := http.NewRequest("POST", tg.url, strings.NewReader(`{"task":"book"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Txn-Token", tok)
		dc, err := dialog.New(dlg, a1.ID)
		if err != nil {
			t.Fatal(err)
		}
		dc.Set(req.Header)
		if _, err := httpsig.NewSigner(a1.Key, a1.WIT, httpsig.WithClock(rw.e.clock.Now)).SignRequest(req, tg.url); err != nil {
			t.Fatal(err)
		}
		res, b := testkit.Do(t, http.DefaultClient, req)
		if res.StatusCode == 200 {
			return ""
		}
		return errcode.CodeOf(problem.Read(res.StatusCode, b))
	}

	// Before: tokens in D1 from every replica, accepted everywhere.
	var d1 []string
	for i := range replicas {
		tok, err := token(i, "D1", "")
		if err != nil {
			t.Fatalf("replica %d before revocation: %v", i, err)
		}
		d1 = append(d1, tok)
	}
	for i, tg := range targets {
		if c := call(tg, "D1", d1[i]); c != "" {
			t.Fatalf("receiver %d before revocation: %s", i, c)
		}
	}

	admin, _ := rw.process()
	now := rw.e.clock.Now()
	if err := admin.Put(ctx, revoke.Revocation{Kind: revoke.Dialog, ID: "D1", Reason: "runaway", Created: now, Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	rw.e.clock.Advance(bound)

	refusedEverywhere := func(when string) {
		t.Helper()
		for i := range replicas {
			if _, err := token(i, "D1", ""); !errcode.Is(err, errcode.DialogRevoked) {
				t.Errorf("%s: replica %d issued a first token in D1: %v", when, i, err)
			}
			if _, err := token(i, "", d1[0]); !errcode.Is(err, errcode.DialogRevoked) {
				t.Errorf("%s: replica %d replaced a token of D1: %v", when, i, err)
			}
		}
		for i, tg := range targets {
			if c := call(tg, "D1", d1[i]); c != errcode.DialogRevoked {
				t.Errorf("%s: receiver %d answered a request in D1 with %q", when, i, c)
			}
		}
	}
	refusedEverywhere("after the bound")
	// Another dialog goes on.
	d2, err := token(1, "D2", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, tg := range targets {
		if c := call(tg, "D2", d2); c != "" {
			t.Errorf("receiver %d refused D2: %s", i, c)
		}
	}
	for i, tg := range targets {
		if n := tg.calls.Load(); n != 2 {
			t.Errorf("receiver %d's application got %d requests, want 2 (D1 before, D2)", i, n)
		}
	}

	// Every process restarts: new clients, stores and checkers.
	cancel()
	rw.ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	_, restarted := rw.process()
	rw.e.srv.cfg.Revocations = restarted
	first0, err := New(func() Config { c := rw.e.srv.cfg; c.Registry, c.Logger = nil, slog.New(slog.DiscardHandler); return c }())
	if err != nil {
		t.Fatal(err)
	}
	replicas = []http.Handler{first0.Handler(), rw.ttsReplica(), rw.ttsReplica()}
	targets = targets[:0]
	for _, ingress := range []bool{true, true, false} {
		url, calls := rw.receiver(ingress)
		targets = append(targets, target{url, calls})
	}
	refusedEverywhere("after a restart")
}
