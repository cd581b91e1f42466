package proxyservice

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// Issue 26, the ingress configured as main runs it (ingress.revocations, store Redis):
// once the trust domain's operator revokes the calling workload in the shared Redis
// (as the TTS's admin API does), the ingress refuses its requests (workload_revoked,
// after verification, nothing reaches the application); lifting it lets them through.
// Needs DIALOGTRUST_TEST_REDIS (fails without it under CI=true).
func TestIssue26_ProxyIngressRefusesRevokedRedis(t *testing.T) {
	addr := testkit.RedisAddr(t)
	witURL, ttsURL := proxyDomain(t)
	var calls atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, "done")
	}))
	defer app.Close()
	prefix := fmt.Sprintf("proxytest:revoke:%d:", time.Now().UnixNano())
	y := strings.Replace(ingressYAML(witURL, ttsURL, app.URL), "  sign_responses: true\n",
		"  sign_responses: true\n  store: {type: redis, redis: {addrs: [\""+addr+"\"]}}\n  revocations: {enabled: true, bound: 2s, prefix: \""+prefix+"\"}\n", 1)
	in := startProxy(t, y)
	out := startProxy(t, egressYAML(witURL, ttsURL, in["ingress"]+"/invoke"))
	mustBookThrough(t, http.DefaultClient, out["egress"]+"/t1")

	client := redisstore.NewClient([]string{addr}, false)
	defer client.Close()
	rs := redisstore.NewRevocations(client, redisstore.WithPrefix(prefix))
	ctx := context.Background()
	defer rs.Delete(ctx, revoke.Workload, "wimse://a.example/agent/a1")
	now := time.Now()
	if err := rs.Put(ctx, revoke.Revocation{Kind: revoke.Workload, ID: "wimse://a.example/agent/a1", Reason: "tricked", Created: now, Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // a failure deadline: the loop waits for the pub/sub notice's effect
	for {
		res, body := postStartDialog(t, http.DefaultClient, out["egress"]+"/t1", `{"task":"book"}`)
		if res.StatusCode == http.StatusForbidden {
			if c := errcode.CodeOf(problem.Read(res.StatusCode, body)); c != errcode.WorkloadRevoked {
				t.Fatalf("refused with %s: %s", c, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revoked workload still gets through: %d %s", res.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := calls.Load()
	if _, err := rs.Delete(ctx, revoke.Workload, "wimse://a.example/agent/a1"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		res, _ := postStartDialog(t, http.DefaultClient, out["egress"]+"/t1", `{"task":"book"}`)
		if res.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused after the revocation was lifted: %d", res.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := calls.Load(); n != before+1 {
		t.Fatalf("the application got %d requests while the workload was revoked", n-before-1)
	}
}

// Issue 26: ingress revocations need the shared Redis store; -check-config refuses
// them on the memory store.
func TestIssue26_ProxyIngressRevocationsNeedRedis(t *testing.T) {
	y := strings.Replace(checkedIngressYAML, "  sign_responses: true\n", "  sign_responses: true\n  revocations: {enabled: true}\n", 1)
	if _, err := checkProxyConfig(t, y); err == nil || !strings.Contains(err.Error(), "store.type must be redis") {
		t.Fatalf("-check-config: %v", err)
	}
}
