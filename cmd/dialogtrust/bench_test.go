package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
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

// bench tts with external signed subject JWTs: access tokens and ID tokens signed here as
// an identity provider the TTS trusts, one per worker or one per request, and one given
// token reused; the server counts every one issued.
func TestBenchTTSExternalSubjects(t *testing.T) {
	idp, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := keys.NewStaticSet(idp.Public())
	const iss = "https://idp.example"
	at, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: iss, Keys: set}}, tts.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idt, err := tts.NewJWTHandler(tts.TokenTypeIDToken, []tts.JWTIssuer{{Issuer: iss, Keys: set}}, tts.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := newTxnEnv(t, at, idt)
	keyFile := filepath.Join(t.TempDir(), "idp.jwk")
	b, _ := json.Marshal(idp)
	if err := os.WriteFile(keyFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"bench", "tts", "--url", e.url, "--wit", e.wit, "--key", e.keyFile, "--audience", "a.example",
		"--duration", "300ms", "--warmup", "0s", "--concurrency", "2", "--server-store", "memory"}
	for _, extra := range [][]string{
		{"--subject-type", "access_token", "--subject-key", keyFile, "--subject-issuer", iss},
		{"--subject-type", "access_token", "--subject-key", keyFile, "--subject-issuer", iss, "--fresh-subject"},
		{"--subject-type", "id_token", "--subject-key", keyFile, "--subject-issuer", iss, "--fresh-subject"},
	} {
		r := runBench(t, append(append([]string(nil), base...), extra...)...)
		if r.Bench != "tts" {
			t.Fatalf("%v: %+v", extra, r)
		}
	}
	// One given access token for every request.
	iat, exp := jose.NumericDate(time.Now().Unix()), jose.NumericDate(time.Now().Add(time.Hour).Unix())
	tok, err := jose.SignClaims("at+jwt", idp, true, map[string]any{"iss": iss, "sub": "alice", "iat": &iat, "exp": &exp, "scope": "trip.read"})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := append(append([]string(nil), base...), "--subject-type", "access_token", "--subject-token", tok, "--json")
	if code := run(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		OK      int64  `json:"ok"`
		Failed  int64  `json:"failed"`
		Details string `json:"details"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.OK == 0 || rep.Failed != 0 ||
		!strings.Contains(rep.Details, "one given access_token") || !strings.Contains(rep.Details, "server replay store memory") {
		t.Fatalf("%v %+v", err, rep)
	}
	// A token from an issuer the TTS does not trust is refused: the bench counts failures.
	other, _ := keys.Generate(keys.ES256)
	otherFile := filepath.Join(t.TempDir(), "other.jwk")
	b, _ = json.Marshal(other)
	if err := os.WriteFile(otherFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	args = append(append([]string(nil), base...), "--subject-type", "access_token", "--subject-key", otherFile, "--subject-issuer", "https://other.example", "--json")
	rep.OK, rep.Failed = 0, 0
	code := run(args, strings.NewReader(""), &out, &errb)
	_ = json.Unmarshal(out.Bytes(), &rep)
	if rep.OK != 0 || (code == 0 && rep.Failed == 0) {
		t.Fatalf("untrusted issuer: exit %d %+v %s", code, rep, errb.String())
	}
}

func TestBenchTTSSubjectUsage(t *testing.T) {
	base := []string{"bench", "tts", "--url", "http://127.0.0.1:1", "--wit-issuer", "http://127.0.0.1:1"}
	for _, extra := range [][]string{
		{"--subject-type", "saml"},
		{"--subject-key", "k.jwk"},                               // needs an external type
		{"--subject-type", "access_token"},                       // needs a key or a token
		{"--subject-type", "access_token", "--subject-key", "k"}, // needs an issuer
		{"--subject-type", "access_token", "--subject-key", "k", "--subject-issuer", "i", "--subject-token", "a.b.c"},
		{"--subject-type", "id_token", "--subject-token", "a.b.c", "--fresh-subject"},
		{"--subject-type", "id_token", "--subject-token", "a.b.c", "--subject-issuer", "i"},
	} {
		var out, errb bytes.Buffer
		if code := run(append(append([]string(nil), base...), extra...), strings.NewReader(""), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", extra, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	run([]string{"bench", "tts", "-h"}, strings.NewReader(""), &out, &errb)
	for _, want := range []string{"-subject-type", "-subject-key", "-server-store", "jwt_issuers", "DIALOGTRUST_TTS_STORE=redis"} {
		if !strings.Contains(errb.String()+out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
