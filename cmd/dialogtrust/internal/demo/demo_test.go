package demo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the demo end to end, as `dialogtrust demo` does; CI runs it.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.TrimSpace(out.String()), " passed, 0 failed") || strings.Contains(out.String(), "FAIL") {
		t.Fatal("a check failed, or one was skipped")
	}
}

// TestDemoExternal runs the flow through the External topology against domains that
// happen to run in this process (deploy/local_test.go runs it against deployed
// processes): every check passes, and the ones an external topology cannot make are
// counted as skipped, not as passed.
func TestDemoExternal(t *testing.T) {
	ctx := context.Background()
	a, b, stop, err := StartDomains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	topo, err := External(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = RunTopology(ctx, &out, topo)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.HasSuffix(strings.TrimSpace(s), " passed, 0 failed, 3 skipped") || strings.Contains(s, "FAIL") {
		t.Fatal("want every check passed and three skipped (the ID-JAG path without an identity provider, no TTS B log, WIT issuer B's server side)")
	}
	if !strings.Contains(s, "against deployed services") || !strings.Contains(s, "  skip  TTS B's own record") {
		t.Fatal("not run as an external topology")
	}

	// With TTS B's log named (here a log without B1's exchange), the log checks run,
	// and the positive control fails instead of the others passing vacuously.
	empty := filepath.Join(t.TempDir(), "tts-b.err")
	if err := os.WriteFile(empty, []byte(`{"msg":"tts started"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.TTSLog = empty
	topo, _ = External(a, b)
	out.Reset()
	if err := RunTopology(ctx, &out, topo); err == nil || !strings.Contains(out.String(), "  FAIL  TTS B's log records B1's exchange") ||
		strings.Contains(out.String(), "TTS B's log never names D1") {
		t.Fatalf("a TTS B log without B1's exchange: err %v\n%s", err, out.String())
	}
}

func TestExternalRefusesBadDomains(t *testing.T) {
	ok := Domain{Name: "a.example", WITIssuer: "http://127.0.0.1:1", TTS: "http://127.0.0.1:2"}
	other := Domain{Name: "b.example", WITIssuer: "http://127.0.0.1:3", TTS: "http://127.0.0.1:4"}
	if _, err := External(ok, other); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]Domain{
		"no name":      {WITIssuer: ok.WITIssuer, TTS: ok.TTS},
		"same name":    {Name: "a.example", WITIssuer: ok.WITIssuer, TTS: ok.TTS},
		"relative URL": {Name: "b.example", WITIssuer: "127.0.0.1:3", TTS: ok.TTS},
		"query":        {Name: "b.example", WITIssuer: ok.WITIssuer, TTS: "http://127.0.0.1:4/?x=1"},
		"scheme":       {Name: "b.example", WITIssuer: "ftp://127.0.0.1:3", TTS: ok.TTS},
	} {
		if _, err := External(ok, d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLocalTopologyFromEnvFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "env")
	body := `# written by up.sh
DIALOGTRUST_LOCAL_DIR=/tmp/x
DIALOGTRUST_LOCAL_A_TRUST_DOMAIN=a.example
DIALOGTRUST_LOCAL_A_WIT_ISSUER=http://127.0.0.1:1
DIALOGTRUST_LOCAL_A_TTS="http://127.0.0.1:2"
export DIALOGTRUST_LOCAL_B_TRUST_DOMAIN=b.example
DIALOGTRUST_LOCAL_B_WIT_ISSUER='http://127.0.0.1:3'
DIALOGTRUST_LOCAL_B_TTS=http://127.0.0.1:4
DIALOGTRUST_LOCAL_B_TTS_LOG=/tmp/x/logs/tts-b.err
OTHER=ignored
`
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vars, err := ReadEnvFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vars["OTHER"]; ok || vars["DIALOGTRUST_LOCAL_A_TTS"] != "http://127.0.0.1:2" || vars["DIALOGTRUST_LOCAL_B_WIT_ISSUER"] != "http://127.0.0.1:3" {
		t.Fatalf("vars %v", vars)
	}
	topo, err := LocalTopology(vars)
	if err != nil {
		t.Fatal(err)
	}
	e := topo.(external)
	if e.a.TTS != "http://127.0.0.1:2" || e.b.Name != "b.example" || e.b.TTSLog != "/tmp/x/logs/tts-b.err" || e.a.TTSLog != "" {
		t.Fatalf("%+v", e)
	}
	delete(vars, "DIALOGTRUST_LOCAL_B_TTS")
	if _, err := LocalTopology(vars); err == nil || !strings.Contains(err.Error(), "DIALOGTRUST_LOCAL_B_TTS") {
		t.Fatalf("without B's TTS: %v", err)
	}
	if err := os.WriteFile(f, []byte("not a variable\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEnvFile(f); err == nil {
		t.Fatal("a line without = was accepted")
	}
	got := EnvFromEnviron([]string{"DIALOGTRUST_LOCAL_A_TTS=http://x", "PATH=/bin"})
	if len(got) != 1 || got["DIALOGTRUST_LOCAL_A_TTS"] != "http://x" {
		t.Fatalf("EnvFromEnviron: %v", got)
	}
}

// TestRecorderTransport: at the sender, the recorder keeps the requests to watched
// hosts as they go on the wire (headers and body), passes them on intact, and ignores
// the others.
func TestRecorderTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer other.Close()
	rec := &recorder{}
	if err := rec.watchURL(srv.URL); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rec.transport(http.DefaultTransport)}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/token", strings.NewReader("subject_token=SECRET"))
	req.Header.Set("Txn-Token", "HEADERVALUE")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = hc.Post(other.URL, "text/plain", strings.NewReader("UNWATCHED"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(got) != 1 || got[0] != "subject_token=SECRET" {
		t.Fatalf("the server received %q", got)
	}
	if rec.count() != 1 || !rec.contains("SECRET") || !rec.contains("HEADERVALUE") || !rec.contains("/token") || rec.contains("UNWATCHED") {
		t.Fatalf("recorded %d requests: %q", rec.count(), rec.seen)
	}
}

// TestStepTimers: each step's time is measured with the printer's clock from its header
// to the next header (or the end), and printed finely enough for a step of milliseconds.
func TestStepTimers(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	now := t0
	r := &Report{}
	p := &printer{r: r, now: func() time.Time { return now }}
	p.stepf("claim one", "one")
	now = now.Add(2500 * time.Microsecond)
	p.stepf("claim two", "two")
	now = now.Add(1500 * time.Millisecond)
	p.endStep()
	now = now.Add(time.Second)
	p.endStep() // once only
	if len(r.Steps) != 2 || r.Steps[0].Duration != 2500*time.Microsecond || r.Steps[1].Duration != 1500*time.Millisecond {
		t.Fatalf("steps %+v", r.Steps)
	}
	var out bytes.Buffer
	if err := WriteText(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n[1/9] one\n        (step 1 took 2.5ms)\n", "\n[2/9] two\n        (step 2 took 1.5s)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("no %q in\n%s", want, out.String())
		}
	}
}
