package kit

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/x509"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit/kittest"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// These tests start redis-server processes of their own (TLS and passwords cannot be
// switched on in the shared DIALOGTRUST_TEST_REDIS server): they skip without
// redis-server, or with one built without TLS, except under CI=true, where they fail.

// startTLSRedis starts redis-server on a free loopback TLS port only (no plain port),
// with the server certificate of ca and extra arguments (passwords, ACL users, client
// authentication); it is killed when the test ends. It returns host:port once the
// server says it accepts connections.
func startTLSRedis(t *testing.T, ca *kittest.CA, certFile, keyFile string, extra ...string) string {
	t.Helper()
	port := testkit.FreePort(t)
	args := append([]string{"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir(),
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", ca.CertFile,
		"--loglevel", "notice"}, extra...)
	runRedis(t, args, "Ready to accept connections")
	return "127.0.0.1:" + strconv.Itoa(port)
}

// runRedis starts redis-server with args, killed when the test ends, and returns once
// it logs readyLine (a server: it accepts connections; a sentinel: it monitors).
func runRedis(t *testing.T, args []string, readyLine string) {
	t.Helper()
	bin := testkit.RedisServer(t)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), readyLine) {
				ready <- true
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			text := logs.String()
			if strings.Contains(text, "TLS") && os.Getenv("CI") != "true" {
				t.Skipf("redis-server without TLS support?\n%s", text)
			}
			t.Fatalf("redis-server exited:\n%s", text)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("redis-server did not start within 20s:\n%s", logs.String())
	}
}

// claimWith opens the store of r and makes one claim and one readiness check.
func claimWith(t *testing.T, r RedisConfig) (claim, ready error) {
	t.Helper()
	r.Prefix = "dialogtrust-tls-test:"
	r.Timeout = 2 * time.Second
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return st.Replay.Claim(ctx, rand.Text(), time.Minute), st.Ready(ctx)
}

// refusedClosed fails the test unless both errors are store_unavailable, could not be
// completed, without secret in their text.
func refusedClosed(t *testing.T, what string, claim, ready error, secret string) {
	t.Helper()
	for name, err := range map[string]error{"claim": claim, "readiness": ready} {
		if errcode.CodeOf(err) != errcode.StoreUnavailable || errcode.KindOf(err) != errcode.Incomplete {
			t.Errorf("%s: %s: %v, want store_unavailable, could not be completed", what, name, err)
		}
		if secret != "" && err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %s error shows the password: %v", what, name, err)
		}
	}
}

func TestRedisPasswordAndTLS(t *testing.T) {
	dir := t.TempDir()
	ca := kittest.NewCA(t, dir, "ca")
	other := kittest.NewCA(t, dir, "other-ca")
	srvCert, srvKey := ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	const password = "s3cret-app-password"
	addr := startTLSRedis(t, ca, srvCert, srvKey, "--tls-auth-clients", "no",
		"--user", "default", "off",
		"--user", "app", "on", ">"+password, "~*", "&*", "+@all")
	passwordFile := filepath.Join(dir, "password")
	if err := os.WriteFile(passwordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_REDIS_PASSWORD", password)
	t.Setenv("TEST_REDIS_WRONG_PASSWORD", "not-"+password)
	good := RedisConfig{Addrs: []string{addr}, Username: "app", PasswordFile: passwordFile, TLS: &RedisTLSConfig{CAFile: ca.CertFile}}

	t.Run("right password and CA", func(t *testing.T) {
		if claim, ready := claimWith(t, good); claim != nil || ready != nil {
			t.Fatalf("claim %v, readiness %v", claim, ready)
		}
		env := good
		env.PasswordFile, env.PasswordEnv = "", "TEST_REDIS_PASSWORD"
		if claim, ready := claimWith(t, env); claim != nil || ready != nil {
			t.Fatalf("password_env: claim %v, readiness %v", claim, ready)
		}
		named := good
		named.TLS = &RedisTLSConfig{CAFile: ca.CertFile, ServerName: kittest.ServerDNSName}
		if claim, ready := claimWith(t, named); claim != nil || ready != nil {
			t.Fatalf("server_name redis.test: claim %v, readiness %v", claim, ready)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		r := good
		r.PasswordFile, r.PasswordEnv = "", "TEST_REDIS_WRONG_PASSWORD"
		claim, ready := claimWith(t, r)
		refusedClosed(t, "wrong password", claim, ready, "not-"+password)
	})
	t.Run("no password", func(t *testing.T) {
		r := good
		r.Username, r.PasswordFile = "", ""
		claim, ready := claimWith(t, r)
		refusedClosed(t, "no password", claim, ready, "")
	})
	t.Run("wrong CA", func(t *testing.T) {
		r := good
		r.TLS = &RedisTLSConfig{CAFile: other.CertFile}
		claim, ready := claimWith(t, r)
		refusedClosed(t, "wrong CA", claim, ready, password)
	})
	t.Run("wrong server name", func(t *testing.T) {
		r := good
		r.TLS = &RedisTLSConfig{CAFile: ca.CertFile, ServerName: "elsewhere.test"}
		claim, ready := claimWith(t, r)
		refusedClosed(t, "server_name elsewhere.test", claim, ready, password)
	})
	t.Run("plain TCP to the TLS port", func(t *testing.T) {
		r := good
		r.TLS = nil
		claim, ready := claimWith(t, r)
		refusedClosed(t, "without tls", claim, ready, password)
	})
}

func TestRedisMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := kittest.NewCA(t, dir, "ca")
	other := kittest.NewCA(t, dir, "other-ca")
	srvCert, srvKey := ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	cliCert, cliKey := ca.Issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	strangerCert, strangerKey := other.Issue(t, dir, "stranger", x509.ExtKeyUsageClientAuth)
	const password = "requirepass-password"
	addr := startTLSRedis(t, ca, srvCert, srvKey, "--tls-auth-clients", "yes", "--requirepass", password)
	t.Setenv("TEST_REDIS_PASSWORD", password)
	base := RedisConfig{Addrs: []string{addr}, PasswordEnv: "TEST_REDIS_PASSWORD"}

	r := base
	r.TLS = &RedisTLSConfig{CAFile: ca.CertFile, CertFile: cliCert, KeyFile: cliKey}
	if claim, ready := claimWith(t, r); claim != nil || ready != nil {
		t.Fatalf("with the client certificate: claim %v, readiness %v", claim, ready)
	}
	r.TLS = &RedisTLSConfig{CAFile: ca.CertFile}
	claim, ready := claimWith(t, r)
	refusedClosed(t, "without a client certificate", claim, ready, password)
	r.TLS = &RedisTLSConfig{CAFile: ca.CertFile, CertFile: strangerCert, KeyFile: strangerKey}
	claim, ready = claimWith(t, r)
	refusedClosed(t, "with a client certificate of another CA", claim, ready, password)
}

// The Sentinel form: the sentinel and the primary both over TLS, each with its own
// password (sentinel_password_env, password_file); a wrong one of either fails closed.
func TestRedisSentinelTLSAndPasswords(t *testing.T) {
	dir := t.TempDir()
	ca := kittest.NewCA(t, dir, "ca")
	srvCert, srvKey := ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	const primaryPassword, sentinelPassword = "primary-password", "sentinel-password"
	primary := startTLSRedis(t, ca, srvCert, srvKey, "--tls-auth-clients", "no", "--requirepass", primaryPassword)
	_, primaryPort, _ := net.SplitHostPort(primary)
	port := testkit.FreePort(t)
	conf := filepath.Join(dir, "sentinel.conf")
	text := "port 0\ntls-port " + strconv.Itoa(port) + "\nbind 127.0.0.1\ndaemonize no\ndir " + dir + "\nloglevel notice\n" +
		"tls-cert-file " + srvCert + "\ntls-key-file " + srvKey + "\ntls-ca-cert-file " + ca.CertFile + "\n" +
		"tls-auth-clients no\ntls-replication yes\nrequirepass " + sentinelPassword + "\n" +
		"sentinel monitor m 127.0.0.1 " + primaryPort + " 1\nsentinel auth-pass m " + primaryPassword + "\n"
	// The sentinel rewrites its configuration file: it must be writable.
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	runRedis(t, []string{conf, "--sentinel"}, "+monitor master m ")
	passwordFile := filepath.Join(dir, "password")
	if err := os.WriteFile(passwordFile, []byte(primaryPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_SENTINEL_PASSWORD", sentinelPassword)
	t.Setenv("TEST_WRONG_PASSWORD", "wrong-password")
	wrongFile := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrongFile, []byte("wrong-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := RedisConfig{
		Sentinel:     SentinelConfig{MasterName: "m", Addrs: []string{"127.0.0.1:" + strconv.Itoa(port)}, SentinelPasswordEnv: "TEST_SENTINEL_PASSWORD"},
		PasswordFile: passwordFile,
		TLS:          &RedisTLSConfig{CAFile: ca.CertFile},
	}
	if claim, ready := claimWith(t, good); claim != nil || ready != nil {
		t.Fatalf("claim %v, readiness %v", claim, ready)
	}
	r := good
	r.Sentinel.SentinelPasswordEnv = "TEST_WRONG_PASSWORD"
	claim, ready := claimWith(t, r)
	refusedClosed(t, "wrong sentinel password", claim, ready, "wrong-password")
	r = good
	r.PasswordFile = wrongFile
	claim, ready = claimWith(t, r)
	refusedClosed(t, "wrong primary password", claim, ready, "wrong-password")
}
