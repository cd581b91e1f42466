package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// localBudget bounds the whole local deployment test: build, start, checks, stop.
const localBudget = 4 * time.Minute

// TestLocalDeployment runs deploy/local/up.sh, which builds the commands and starts a
// redis-server and both trust domains' wit-issuer and TTS as processes on loopback; then
// checks that every /readyz answers 200, that each domain issues a WIT (dialogtrust wit
// request) and, for it, a Txn-Token (dialogtrust txn request) that verifies against the
// TTS's JWKS with the requested audience and dialog; that TTS A refuses b.example's WIT
// and TTS B, which trusts a.example's WITs for identity chaining only, gives no
// a.example workload a Txn-Token; that both TTSs run with the chaining configuration
// up.sh wrote from the templates; that `dialogtrust demo --local ENVFILE` runs the whole
// demo flow (dialogs, tool call, signed handoff, grant from TTS A, access token from TTS
// B, linked dialog, domain separation) against the deployed services with no failed
// check, and fails when the env file points it at the wrong TTS; and that the replay
// claims went to Redis under each service's prefix. Then deploy/local/down.sh must stop
// exactly the processes up.sh recorded, leaving none.
//
// It needs redis-server: without it the test skips, except under CI=true, where it
// fails, so that CI cannot silently stop running it.
func TestLocalDeployment(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed and CI=true: the local deployment test must run in CI (use .ci/run)")
		}
		t.Skip("redis-server is not installed; skipping the local deployment test")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed for deploy/local/up.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), localBudget)
	defer cancel()

	dir := filepath.Join(t.TempDir(), "local")
	env := cleanEnv(map[string]string{
		"DIALOGTRUST_LOCAL_DIR":           dir,
		"DIALOGTRUST_LOCAL_READY_TIMEOUT": "60",
		// Progress lines every second while it builds (checkUpBuildReport).
		"DIALOGTRUST_LOCAL_PROGRESS_SECONDS": "1",
		// up.sh runs go build; make sure it finds the same go as this test.
		"PATH": filepath.Dir(goBin()) + string(os.PathListSeparator) + os.Getenv("PATH"),
	})
	script := func(name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join("local", name)}, args...)...)
		cmd.Env = env
		cmd.WaitDelay = 5 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	// Whatever happens below, stop what up.sh started (down.sh without --keep is
	// idempotent: a second run finds no directory and does nothing).
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		if out, err := script("down.sh", dir); err != nil {
			t.Errorf("down.sh during clean-up: %v\n%s", err, out)
		}
	})

	start := time.Now()
	out, err := script("up.sh")
	if err != nil {
		t.Fatalf("up.sh: %v\n%s", err, out)
	}
	t.Logf("up.sh took %v", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, "env file: "+filepath.Join(dir, "env")) {
		t.Errorf("up.sh did not print the env file:\n%s", out)
	}
	checkUpBuildReport(t, out, dir)
	runTryIt(ctx, t, out, dir)

	vars := readEnvFile(t, filepath.Join(dir, "env"))
	procs := readPIDs(t, filepath.Join(dir, "pids"))
	if len(procs) != 5 {
		t.Fatalf("pids: %v, want redis and four services", procs)
	}
	for name := range procs {
		if !running(procs[name]) {
			t.Errorf("%s (pid %d) is not running", name, procs[name])
		}
	}

	dt := filepath.Join(vars["DIALOGTRUST_LOCAL_BIN"], "dialogtrust")
	work := t.TempDir()
	cli := func(args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, dt, args...)
		cmd.Dir = work
		cmd.Env = cleanEnv(nil)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	var urls []string
	for _, d := range []string{"A", "B"} {
		urls = append(urls, vars["DIALOGTRUST_LOCAL_"+d+"_WIT_ISSUER"], vars["DIALOGTRUST_LOCAL_"+d+"_TTS"])
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("service URL %q is not on loopback", u)
		}
		if code := getStatus(ctx, t, u+"/readyz"); code != http.StatusOK {
			t.Errorf("GET %s/readyz: %d", u, code)
		}
	}

	wits := map[string]string{}
	for _, d := range []string{"a", "b"} {
		D := strings.ToUpper(d)
		td := vars["DIALOGTRUST_LOCAL_"+D+"_TRUST_DOMAIN"]
		if td != d+".example" {
			t.Fatalf("trust domain %q", td)
		}
		workload := "wimse://" + td + "/agent/" + d + "1"
		keyFile := filepath.Join(work, d+"1.jwk")
		wit, errOut, err := cli("wit", "request", "--issuer", vars["DIALOGTRUST_LOCAL_"+D+"_WIT_ISSUER"],
			"--workload", workload, "--key-out", keyFile)
		if err != nil {
			t.Fatalf("%s: wit request: %v\n%s", td, err, errOut)
		}
		witFile := filepath.Join(work, d+"1.wit")
		if err := os.WriteFile(witFile, []byte(strings.TrimSpace(wit)), 0o600); err != nil {
			t.Fatal(err)
		}
		wits[d] = witFile
		dialog := "D-local-" + d
		txn, errOut, err := cli("txn", "request", "--tts", vars["DIALOGTRUST_LOCAL_"+D+"_TTS"], "--wit", "@"+witFile,
			"--key", keyFile, "--self-signed", "alice@"+td, "--scope", "trip.read", "--audience", td, "--dialog", dialog)
		if err != nil {
			t.Fatalf("%s: txn request: %v\n%s", td, err, errOut)
		}
		txnFile := filepath.Join(work, d+"1.txn")
		if err := os.WriteFile(txnFile, []byte(strings.TrimSpace(txn)), 0o600); err != nil {
			t.Fatal(err)
		}
		verdictJSON, errOut, err := cli("txn", "verify", "--json", "--jwks", vars["DIALOGTRUST_LOCAL_"+D+"_TTS"]+"/.well-known/jwks.json",
			"--audience", td, "--dialog", dialog, "@"+txnFile)
		if err != nil {
			t.Fatalf("%s: txn verify: %v\n%s", td, err, errOut)
		}
		var verdict struct {
			Verified bool `json:"verified"`
			Claims   struct {
				Iss   string         `json:"iss"`
				Aud   string         `json:"aud"`
				Sub   string         `json:"sub"`
				ReqWL string         `json:"req_wl"`
				Tctx  map[string]any `json:"tctx"`
			} `json:"claims"`
		}
		if err := json.Unmarshal([]byte(verdictJSON), &verdict); err != nil || !verdict.Verified {
			t.Fatalf("%s: txn verify --json printed %q: %v", td, verdictJSON, err)
		}
		claims := verdict.Claims
		if claims.Iss != vars["DIALOGTRUST_LOCAL_"+D+"_TTS"] || claims.Aud != td || claims.Sub != "alice@"+td ||
			claims.ReqWL != workload || claims.Tctx["dlg"] != dialog {
			t.Errorf("%s: Txn-Token claims %+v", td, claims)
		}
	}
	// The domains are separate. TTS A does not trust b.example's wit-issuer at all.
	keyB := filepath.Join(work, "b1.jwk")
	_, errOut, err := cli("txn", "request", "--tts", vars["DIALOGTRUST_LOCAL_A_TTS"], "--wit", "@"+wits["b"],
		"--key", keyB, "--self-signed", "alice@b.example", "--scope", "trip.read", "--audience", "a.example")
	if err == nil || !strings.Contains(errOut, "untrusted_issuer") {
		t.Errorf("a.example's TTS with b.example's WIT: err %v, stderr %q; want untrusted_issuer", err, errOut)
	}
	// TTS B trusts a.example's WITs, but only for its authorization server (redeeming
	// TTS A's grants): no policy rule gives an a.example workload a Txn-Token of
	// b.example, for either audience.
	keyA := filepath.Join(work, "a1.jwk")
	for _, aud := range []string{"b.example", "a.example"} {
		_, errOut, err = cli("txn", "request", "--tts", vars["DIALOGTRUST_LOCAL_B_TTS"], "--wit", "@"+wits["a"],
			"--key", keyA, "--self-signed", "alice@a.example", "--scope", "trip.read", "--audience", aud)
		if err == nil || !strings.Contains(errOut, "workload_not_allowed") {
			t.Errorf("b.example's TTS with a.example's WIT, audience %s: err %v, stderr %q; want workload_not_allowed", aud, err, errOut)
		}
	}

	// Identity chaining is configured between the two TTSs: each runs with the
	// configuration up.sh wrote from its template, which names the other's URL, and
	// which the TTS itself accepts.
	for _, d := range []string{"A", "B"} {
		other := map[string]string{"A": "B", "B": "A"}[d]
		cfg := vars["DIALOGTRUST_LOCAL_"+d+"_TTS_CONFIG"]
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatalf("TTS %s configuration: %v", d, err)
		}
		if !strings.Contains(string(b), "issuer: \""+vars["DIALOGTRUST_LOCAL_"+other+"_TTS"]+"\"") || regexp.MustCompile(`@[A-Z_]+@`).Match(b) {
			t.Errorf("%s: does not name TTS %s as chaining peer, or has a placeholder left:\n%s", cfg, other, b)
		}
		cmd := exec.CommandContext(ctx, filepath.Join(vars["DIALOGTRUST_LOCAL_BIN"], "tts"), "-check-config", "--config", cfg)
		cmd.Env = cleanEnv(nil)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("tts -check-config --config %s: %v\n%s", cfg, err, out)
		}
	}

	// The acceptance point: the demo flow of `dialogtrust demo` (dialog D1, a tool
	// call, a signed handoff from A2 to B1 across the boundary, grant from TTS A,
	// access token from TTS B, linked dialog D2, B1's Txn-Token of b.example, statuses
	// back, the ID-JAG path to D3, domain separation) runs against the deployed services and every check
	// passes. The workloads run in the demo process; the WIT issuers and TTSs are the
	// deployed ones, found through the env file.
	envFile := filepath.Join(dir, "env")
	demoOut, errOut, code := runDemo(ctx, t, dt, work, "--local", envFile)
	t.Logf("dialogtrust demo --local %s:\n%s", envFile, demoOut)
	if code != 0 || !regexp.MustCompile(`(?m)^\d+ passed, 0 failed(, \d+ skipped)?$`).MatchString(demoOut) || strings.Contains(demoOut, "  FAIL  ") {
		t.Errorf("dialogtrust demo --local: exit %d, stderr %q; want exit 0 and 0 failed", code, errOut)
	}
	if !strings.HasPrefix(demoOut, "dialogtrust demo: ") || !strings.Contains(strings.SplitN(demoOut, "\n", 2)[0], "against deployed services") {
		t.Errorf("dialogtrust demo --local did not run against the deployed services")
	}
	for _, want := range []string{
		"TTS A's metadata names it as issuer and offers identity-chaining grants (AS A)",
		"TTS B's metadata names it as issuer and offers the jwt-bearer grant (AS B)",
		"AS A issued a grant for AS B; AS B redeemed it for a domain-B access token",
		"B1: the offer's grant is the SHA-256 of the access token",
		"the domain-B Txn-Token verifies through TTS B's JWKS and records D2 in tctx.dlg",
		"A2 verified B1's \"completed\" status",
		// Step 8, the ID-JAG path (issue 28): an ID token signed with the identity
		// provider key up.sh made, an ID-JAG from TTS A, an access token from TTS B.
		"AS A issued an ID-JAG for AS B on the ID token; AS B redeemed it for a domain-B access token",
		"the domain-B Txn-Token verifies through TTS B's JWKS, records D3 in tctx.dlg and is for the same user",
		"A1's ID token (step 8) never reached domain B",
		"D1's identifier never reached domain B",
		"TTS B's log records B1's exchange",
		"TTS B's log has neither the domain-A Txn-Token nor its hash",
	} {
		if !strings.Contains(demoOut, "\n   ok   "+want) {
			t.Errorf("dialogtrust demo --local: no passed check %q", want)
		}
	}
	for _, u := range []string{vars["DIALOGTRUST_LOCAL_A_TTS"], vars["DIALOGTRUST_LOCAL_B_TTS"]} {
		if !strings.Contains(demoOut, u) {
			t.Errorf("dialogtrust demo --local did not use %s", u)
		}
	}
	// And it really talks to what the env file names: with TTS B's URL pointing at
	// TTS A, it fails (non-zero exit, failed checks), it does not fall back to an
	// in-process domain.
	bad := filepath.Join(work, "bad.env")
	badVars := strings.ReplaceAll(mustRead(t, envFile), "DIALOGTRUST_LOCAL_B_TTS="+vars["DIALOGTRUST_LOCAL_B_TTS"],
		"DIALOGTRUST_LOCAL_B_TTS="+vars["DIALOGTRUST_LOCAL_A_TTS"])
	if err := os.WriteFile(bad, []byte(badVars), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runDemo(ctx, t, dt, work, "--local", bad); code == 0 || strings.Contains(out, " passed, 0 failed") {
		t.Errorf("dialogtrust demo --local with TTS B replaced by TTS A: exit %d; want a failure\n%s", code, out)
	}

	// The stores are Redis: each service claimed its request proofs under its prefix.
	rdb := redis.NewClient(&redis.Options{Addr: vars["DIALOGTRUST_LOCAL_REDIS"]})
	defer rdb.Close()
	for _, d := range []string{"a", "b"} {
		for _, svc := range []string{"wit-issuer", "tts"} {
			prefix := "dialogtrust:" + d + ".example:" + svc + ":replay:"
			keys, err := rdb.Keys(ctx, prefix+"*").Result()
			if err != nil {
				t.Fatalf("redis: %v", err)
			}
			if len(keys) == 0 {
				t.Errorf("no replay claims under %s in Redis", prefix)
			}
		}
	}
	// File-backed keys: each service's key material is in the data directory.
	for _, f := range []string{"a/wit-issuer/keyring.json", "b/wit-issuer/keyring.json", "a/tts/tts-keys.json", "b/tts/tts-keys.json"} {
		if st, err := os.Stat(filepath.Join(dir, "data", f)); err != nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("data/%s: %v (mode %v); want a file readable by its owner only", f, err, st)
		}
	}

	out, err = script("down.sh", dir)
	if err != nil {
		t.Fatalf("down.sh: %v\n%s", err, out)
	}
	stopped = true
	for name, pid := range procs {
		if running(pid) {
			t.Errorf("%s (pid %d) still runs after down.sh", name, pid)
		}
	}
	for _, u := range urls {
		host := strings.TrimPrefix(u, "http://")
		if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after down.sh", u)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("down.sh left %s behind (%v)", dir, err)
	}
	// down.sh again, with nothing running, is harmless.
	if out, err := script("down.sh", dir); err != nil {
		t.Errorf("second down.sh: %v\n%s", err, out)
	}
}

// demoBudget bounds one run of `dialogtrust demo --local` (it takes well under a
// second on loopback).
const demoBudget = time.Minute

// runDemo runs `dialogtrust demo ARGS...` in work and returns its stdout, stderr and
// exit code.
func runDemo(ctx context.Context, t *testing.T, dt, work string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, demoBudget)
	defer cancel()
	cmd := exec.CommandContext(ctx, dt, append([]string{"demo"}, args...)...)
	cmd.Dir = work
	cmd.Env = cleanEnv(nil)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("dialogtrust demo: %v\n%s", err, stderr.String())
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || !strings.HasPrefix(k, "DIALOGTRUST_LOCAL_") {
			t.Fatalf("%s: line %q", path, sc.Text())
		}
		vars[k] = v
	}
	for _, k := range []string{"DIALOGTRUST_LOCAL_BIN", "DIALOGTRUST_LOCAL_REDIS", "DIALOGTRUST_LOCAL_A_WIT_ISSUER",
		"DIALOGTRUST_LOCAL_A_TTS", "DIALOGTRUST_LOCAL_B_WIT_ISSUER", "DIALOGTRUST_LOCAL_B_TTS",
		"DIALOGTRUST_LOCAL_A_TTS_CONFIG", "DIALOGTRUST_LOCAL_B_TTS_CONFIG", "DIALOGTRUST_LOCAL_B_TTS_LOG"} {
		if vars[k] == "" {
			t.Fatalf("%s: no %s", path, k)
		}
	}
	return vars
}

// readPIDs reads up.sh's record of what it started: "name pid executable" per line.
func readPIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("%s: line %q", path, l)
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid <= 1 {
			t.Fatalf("%s: line %q", path, l)
		}
		out[f[0]] = pid
	}
	return out
}

// running reports whether pid is a live process. A zombie has exited: it only waits for
// whoever inherited it (up.sh has exited) to collect it, which a container's init may
// never do.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if _, statErr := os.Stat("/proc/self/stat"); statErr != nil {
			// No procfs: kill(pid, 0).
			p, err := os.FindProcess(pid)
			return err == nil && p.Signal(syscall.Signal(0)) == nil
		}
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func getStatus(ctx context.Context, t *testing.T, u string) int {
	t.Helper()
	if _, err := url.Parse(u); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", u, err)
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}
