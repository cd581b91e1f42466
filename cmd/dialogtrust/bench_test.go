package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type benchJSON struct {
	Bench    string           `json:"bench"`
	Proof    string           `json:"proof"`
	OK       int64            `json:"ok"`
	Failed   int64            `json:"failed"`
	Errors   map[string]int64 `json:"errors"`
	Requests int64            `json:"requests"`
	Latency  struct {
		Samples int     `json:"samples"`
		P50     float64 `json:"p50_ms"`
		P99     float64 `json:"p99_ms"`
	} `json:"latency"`
	Server struct {
		Note string `json:"note"`
	} `json:"server"`
}

func runBench(t *testing.T, args ...string) benchJSON {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append(args, "--json"), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d\nstdout %s\nstderr %s", args, code, out.String(), errb.String())
	}
	var r benchJSON
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if r.OK == 0 || r.Failed != 0 || r.Requests != r.OK || r.Latency.Samples != int(r.Requests) || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
		t.Fatalf("%v: %+v", args, r)
	}
	return r
}

// bench tts against a TTS on loopback, with a WIT and key from files, both proofs. This
// TTS's registry has no process collector, which the report says instead of a figure.
func TestBenchTTS(t *testing.T) {
	e := newTxnEnv(t)
	for _, proof := range []string{"wpt", "httpsig"} {
		r := runBench(t, "bench", "tts", "--url", e.url, "--wit", e.wit, "--key", e.keyFile, "--audience", "a.example",
			"--proof", proof, "--duration", "300ms", "--warmup", "50ms", "--concurrency", "2")
		if r.Bench != "tts" || r.Proof != proof || !strings.Contains(r.Server.Note, "process_cpu_seconds_total") {
			t.Fatalf("%+v", r)
		}
	}
	// Open loop, and a subject token per request.
	runBench(t, "bench", "tts", "--url", e.url, "--wit", e.wit, "--key", e.keyFile, "--fresh-subject",
		"--rate", "200", "--duration", "300ms", "--warmup", "0s", "--concurrency", "4")
	// The human table.
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "tts", "--url", e.url, "--wit", e.wit, "--key", e.keyFile, "--duration", "200ms", "--warmup", "0s", "--concurrency", "1"},
		strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"throughput", "latency ms", "p99", "errors         none", "server CPU     n/a", "client CPU"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// bench verify with everything in this process: WITs minted here, the receiver started
// here; both proofs, a stateful receiver.
func TestBenchVerifyInProcess(t *testing.T) {
	r := runBench(t, "bench", "verify", "--duration", "300ms", "--warmup", "50ms", "--concurrency", "2")
	if r.Bench != "verify" || r.Proof != "httpsig" {
		t.Fatalf("%+v", r)
	}
	runBench(t, "bench", "verify", "--proof", "wpt", "--alg", "EdDSA", "--stateful", "--duration", "300ms", "--warmup", "0s", "--concurrency", "3", "--workloads", "2")
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "tts"},
		{"bench", "tts", "--url", "http://127.0.0.1:1"},
		{"bench", "tts", "--url", "http://127.0.0.1:1", "--wit-issuer", "http://127.0.0.1:1", "--proof", "none"},
		{"bench", "tts", "--url", "http://127.0.0.1:1", "--wit-issuer", "http://127.0.0.1:1", "--concurrency", "0"},
		{"bench", "verify", "--url", "http://127.0.0.1:1/x"},
		{"bench", "verify", "--proof", "none"},
		{"bench", "receiver", "--trust", "x", "--listen", "0.0.0.0:0"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// A bench run says on stderr that it is running: the warmup, then (in a run of more
// than a second) its progress every second.
func TestBenchProgress(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "verify", "--duration", "1100ms", "--warmup", "50ms", "--concurrency", "1", "--json"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"bench: warming up, then measuring for 1.1s\n", " of 1.1s, ", " requests answered, 0 failed\n"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if strings.Contains(out.String(), "bench:") {
		t.Errorf("progress on stdout:\n%s", out.String())
	}
}
