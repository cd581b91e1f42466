package faulttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	gobuild "go/build"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// envEnable switches the fault tests on.
const envEnable = "DIALOGTRUST_FAULT_TESTS"

// The trust domain and the TTS issuer identifier every test uses. The issuer is not the
// listen URL, so that replicas on different ports are one TTS to their clients (the
// proofs name the token endpoint <issuer>/token, as behind a load balancer).
const (
	trustDomain = "fault.test"
	ttsIssuer   = "http://tts.fault.test"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// harness is what every test gets: the paths of the binaries.
type harness struct {
	witIssuer, tts, redis string
}

// setup skips unless the fault tests are switched on, fails under CI when redis-server
// is missing, and builds the binaries once per test run.
func setup(t *testing.T) *harness {
	t.Helper()
	if os.Getenv(envEnable) != "1" {
		t.Skipf("fault tests run only with %s=1 (see .ci/fault)", envEnable)
	}
	redis := testkit.RedisServer(t)
	binOnce.Do(buildBinaries)
	if binErr != nil {
		t.Fatal(binErr)
	}
	// Other work on the machine shares its cores with the servers and the load: say
	// how busy it was.
	before := loadAvg()
	t.Cleanup(func() { figure(t, "machine load average (1 min): %s at the start, %s at the end", before, loadAvg()) })
	return &harness{
		witIssuer: filepath.Join(binDir, "wit-issuer"),
		tts:       filepath.Join(binDir, "tts"),
		redis:     redis,
	}
}

func buildBinaries() {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(gobuild.Default.GOROOT, "bin", "go")
	}
	binDir, binErr = os.MkdirTemp("", "dialogtrust-faulttest-")
	if binErr != nil {
		return
	}
	cmd := exec.Command(goBin, "build", "-o", binDir+string(os.PathSeparator),
		"github.com/dialogtrust/dialogtrust/cmd/wit-issuer", "github.com/dialogtrust/dialogtrust/cmd/tts")
	if out, err := cmd.CombinedOutput(); err != nil {
		binErr = fmt.Errorf("go build: %v\n%s", err, out)
	}
}

// tailBuffer keeps the last max octets written to it: a process's logs, for the
// failure message, without growing with the run.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// lineWatcher passes output to a tailBuffer and reports the first line with prefix.
type lineWatcher struct {
	tail   *tailBuffer
	prefix string
	mu     sync.Mutex
	buf    []byte
	found  chan string
	once   sync.Once
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	_, _ = w.tail.Write(p)
	if w.prefix == "" {
		return len(p), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if strings.HasPrefix(line, w.prefix) {
			w.once.Do(func() { w.found <- line })
		}
	}
	if len(w.buf) > 64<<10 {
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// proc is a process a test started. It is stopped by its PID when the test ends.
type proc struct {
	name     string
	cmd      *exec.Cmd
	pid      int
	logs     *tailBuffer
	done     chan struct{}
	exitErr  error
	exitedAt time.Time
}

// startProc starts bin with args and waits (at most 20 s) for a stdout line starting
// with readyPrefix (none: returns at once). It returns the line.
func startProc(t *testing.T, name, bin string, args []string, readyPrefix string) (*proc, string) {
	t.Helper()
	p := &proc{name: name, logs: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}
	w := &lineWatcher{tail: p.logs, prefix: readyPrefix, found: make(chan string, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = cleanEnv()
	p.cmd.Stdout = w
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p.pid = p.cmd.Process.Pid
	go func() {
		p.exitErr = p.cmd.Wait()
		p.exitedAt = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill(t) })
	if readyPrefix == "" {
		return p, ""
	}
	select {
	case line := <-w.found:
		return p, line
	case <-p.done:
		t.Fatalf("%s exited before it was ready: %v\n%s", name, p.exitErr, p.logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not start within 20s\n%s", name, p.logs.String())
	}
	return nil, ""
}

// cleanEnv is this process's environment without the services' own variables, so that
// a developer's DIALOGTRUST_TTS_* or DIALOGTRUST_WIT_ISSUER_* cannot change a test.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DIALOGTRUST_TTS_") || strings.HasPrefix(kv, "DIALOGTRUST_WIT_ISSUER_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// kill stops the process by its PID (SIGKILL) if it still runs, and reaps it.
func (p *proc) kill(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	// By PID (os.Process holds a pidfd, so an exited process is never confused with a
	// new one). A stopped (SIGSTOP) process dies of SIGKILL too.
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid)
	}
}

// signal sends sig to the process by its PID.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("kill -%d %s (pid %d): %v", sig, p.name, p.pid, err)
	}
}

// wait waits at most d for the process to exit and reports whether it did.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// exitCode is the exit status, or -1 when the process was killed by a signal.
func (p *proc) exitCode() int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// rssKiB reads VmRSS from /proc/PID/status (kB).
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

// redisProc is a redis-server on a loopback port.
type redisProc struct {
	*proc
	port       int
	dir        string
	persistent bool
}

func (r *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// startRedis starts redis-server on a free loopback port (port 0) or on port, without
// persistence (--save "" --appendonly no) unless persistent, where every write is in
// the append-only file before Redis answers (appendfsync always), so that a restart
// keeps every claim.
func (h *harness) startRedis(t *testing.T, port int, dir string, persistent bool) *redisProc {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	for attempt := 0; attempt < 3; attempt++ {
		p := port
		if p == 0 {
			p = testkit.FreePort(t)
		}
		args := []string{"--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no", "--dir", dir, "--loglevel", "warning"}
		if persistent {
			args = append(args, "--appendonly", "yes", "--appendfsync", "always")
		} else {
			args = append(args, "--appendonly", "no")
		}
		pr, _ := startProc(t, "redis-server", h.redis, args, "")
		r := &redisProc{proc: pr, port: p, dir: dir, persistent: persistent}
		if r.waitPing(10 * time.Second) {
			return r
		}
		pr.kill(t)
		t.Logf("redis-server on port %d did not answer PING (attempt %d):\n%s", p, attempt+1, pr.logs.String())
		if port != 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Fatal("could not start redis-server")
	return nil
}

// restart starts a new redis-server on the same port with the same persistence.
func (h *harness) restartRedis(t *testing.T, old *redisProc) *redisProc {
	t.Helper()
	return h.startRedis(t, old.port, old.dir, old.persistent)
}

// ping sends PING and reports whether PONG came back within d.
func redisPing(addr string, d time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

func (r *redisProc) waitPing(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			return false
		default:
		}
		if redisPing(r.addr(), 200*time.Millisecond) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// redisCommand sends one inline command and returns the first reply line (integers
// and simple strings) or the bulk string.
func redisCommand(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") {
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("redis: %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	if strings.HasPrefix(line, "-") {
		return "", errors.New(line)
	}
	return strings.TrimLeft(line, ":+"), nil
}

// service is a started wit-issuer or tts.
type service struct {
	*proc
	url string
}

// witIssuerConfig: the development method (authenticates nobody; the tests are the
// only clients on loopback), the replay store in Redis when redis is set.
type witIssuerConfig struct {
	redis           string
	shutdownTimeout time.Duration
	// proofWindow and skew, when set, shorten how long request jtis are held;
	// lossQuarantine is store.redis.loss_quarantine.
	proofWindow, skew, lossQuarantine time.Duration
	// issuer, when set, is the issuer identifier (else the listen URL), so that
	// replicas on different ports are one issuer.
	issuer string
	// rotation, when set, is the keys section's rotation schedule and, with a secret
	// file, keys.shared (the store must then be Redis).
	rotation keyRotation
}

// keyRotation is what a test sets of a service's keys section: keys.rotation_period,
// publish_delay, step_interval and jwks_max_age, and keys.shared.secret_file.
type keyRotation struct {
	period, publishDelay, step, jwksMaxAge time.Duration
	sharedSecretFile                       string
	// pkcs11, when set, is keys.pkcs11 (a YAML flow mapping), in place of the data_dir.
	pkcs11 string
}

// yaml is the keys members (indented two spaces) that come in place of dataDir's.
func (k keyRotation) yaml(dataDir string) string {
	y := "  data_dir: " + dataDir + "\n"
	if k.sharedSecretFile != "" {
		y = fmt.Sprintf("  shared: {secret_file: %q}\n", k.sharedSecretFile)
	}
	if k.pkcs11 != "" {
		y = "  pkcs11: " + k.pkcs11 + "\n"
	}
	if k.period > 0 {
		y += fmt.Sprintf("  rotation_period: %s\n  publish_delay: %s\n  step_interval: %s\n", k.period, k.publishDelay, k.step)
	}
	if k.jwksMaxAge > 0 {
		y += fmt.Sprintf("  jwks_max_age: %s\n", k.jwksMaxAge)
	}
	return y
}

func (h *harness) startWITIssuer(t *testing.T, c witIssuerConfig) *service {
	t.Helper()
	dir := t.TempDir()
	if c.shutdownTimeout == 0 {
		c.shutdownTimeout = 5 * time.Second
	}
	y := fmt.Sprintf(`listen: 127.0.0.1:0
trust_domains: [%s]
keys:
  alg: ES256
%sstore: %s
policy:
  max_lifetime: 1h
auth:
  dev:
    prefixes: ["wimse://%s/"]
routes:
  - {path: /v1/wit, methods: [dev]}
log: {level: error}
shutdown_timeout: %s
`, trustDomain, c.rotation.yaml(filepath.Join(dir, "keys")), storeYAML(c.redis, "faulttest:wit:", c.lossQuarantine), trustDomain, c.shutdownTimeout)
	if c.issuer != "" {
		y += fmt.Sprintf("issuer: %s\n", c.issuer)
	}
	if c.proofWindow > 0 {
		y += fmt.Sprintf("proof_window: %s\n", c.proofWindow)
	}
	if c.skew > 0 {
		y += fmt.Sprintf("skew: %s\n", c.skew)
	}
	cfg := filepath.Join(dir, "wit-issuer.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	p, line := startProc(t, "wit-issuer", h.witIssuer, []string{"--config", cfg}, "wit-issuer listening on ")
	s := &service{proc: p, url: strings.Fields(strings.TrimPrefix(line, "wit-issuer listening on "))[0]}
	waitReady(t, s, 10*time.Second)
	return s
}

func storeYAML(redis, prefix string, lossQuarantine time.Duration) string {
	if redis == "" {
		return "{type: memory}"
	}
	q := ""
	if lossQuarantine > 0 {
		q = ", loss_quarantine: " + lossQuarantine.String()
	}
	return fmt.Sprintf("{type: redis, redis: {addrs: [%q], prefix: %q, timeout: 500ms%s}}", redis, prefix, q)
}

// ttsConfig: what a test varies in a TTS.
type ttsConfig struct {
	witJWKS         string
	redis           string
	signingKeyFile  string // else a data_dir
	rotationPeriod  time.Duration
	publishDelay    time.Duration
	stepInterval    time.Duration
	shutdownTimeout time.Duration
	// skew and lossQuarantine, when set: the TTS's skew and store.redis.loss_quarantine.
	skew, lossQuarantine time.Duration
	// jwksMaxAge and sharedSecretFile, when set: keys.jwks_max_age and
	// keys.shared.secret_file (in place of the data_dir; the store must be Redis).
	jwksMaxAge       time.Duration
	sharedSecretFile string
	// pkcs11, when set, is keys.pkcs11 (a YAML flow mapping; pkcs11_test.go).
	pkcs11 string
}

func (h *harness) startTTS(t *testing.T, c ttsConfig) *service {
	t.Helper()
	p, line := startProc(t, "tts", h.tts, []string{"--config", writeTTSConfig(t, c)}, "tts listening on ")
	s := &service{proc: p, url: strings.Fields(strings.TrimPrefix(line, "tts listening on "))[0]}
	waitReady(t, s, 10*time.Second)
	return s
}

// writeTTSConfig writes the configuration file of a TTS and returns its path.
func writeTTSConfig(t *testing.T, c ttsConfig) string {
	t.Helper()
	dir := t.TempDir()
	if c.shutdownTimeout == 0 {
		c.shutdownTimeout = 5 * time.Second
	}
	keysYAML := keyRotation{period: c.rotationPeriod, publishDelay: c.publishDelay, step: c.stepInterval,
		jwksMaxAge: c.jwksMaxAge, sharedSecretFile: c.sharedSecretFile, pkcs11: c.pkcs11}.yaml(filepath.Join(dir, "keys"))
	if c.signingKeyFile != "" {
		keysYAML = "  signing_key_file: " + c.signingKeyFile + "\n"
		if c.rotationPeriod > 0 {
			keysYAML += fmt.Sprintf("  rotation_period: %s\n  publish_delay: %s\n  step_interval: %s\n", c.rotationPeriod, c.publishDelay, c.stepInterval)
		}
	}
	y := fmt.Sprintf(`development: false
listen: 127.0.0.1:0
issuer: %s
trust_domains: [%s]
keys:
  alg: ES256
%sstore: %s
wits:
  - {trust_domain: %s, jwks_url: %q}
jwks_retry: 100ms
auth:
  methods: [wit_httpsig, wit_wpt]
subject_tokens:
  self_signed: {enabled: true}
policy:
  lifetime: 5m
  rules:
    - workload: "wimse://%s/"
      subject_token_types: [self_signed]
      details: ["*"]
log: {level: warn}
shutdown_timeout: %s
`, ttsIssuer, trustDomain, keysYAML, storeYAML(c.redis, "faulttest:tts:", c.lossQuarantine), trustDomain, c.witJWKS, trustDomain, c.shutdownTimeout)
	if c.skew > 0 {
		y += fmt.Sprintf("skew: %s\n", c.skew)
	}
	cfg := filepath.Join(dir, "tts.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// writeSigningKey writes a private JWK that replicas share.
func writeSigningKey(t *testing.T) string {
	t.Helper()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tts-signing.jwk")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readyz returns the status of GET /readyz (0 when there is no answer).
func readyz(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
	res, err := probeClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// probeClient opens a new connection for every request.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

func waitReady(t *testing.T, s *service, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if readyz(s.url) == http.StatusOK {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s at %s not ready within %s\n%s", s.name, s.url, d, s.logs.String())
}

// figure logs a line that .ci/fault collects into its summary.
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("FIGURE %s: %s", t.Name(), fmt.Sprintf(format, args...))
}

// loadAvg is the one-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// cpuTicks reads the machine's busy and total CPU time (/proc/stat, all cores).
func cpuTicks() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// procTicks reads a process's user+system CPU time in clock ticks (/proc/PID/stat).
func procTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields after it start at the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// clockTick is USER_HZ, 100 on Linux.
const clockTick = 100
