package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/tracing"
	"github.com/dialogtrust/dialogtrust/internal/tracing/tracingtest"
	"github.com/dialogtrust/dialogtrust/tts"
)

// Issue 7, observability: with tracing.otlp_endpoint set, the TTS exports a server span
// per request to the collector over OTLP/HTTP, joined to its log line by the request
// id; probes are not traced; and nothing of the request's credentials is in a span.
// On shutdown the buffered spans are flushed.
func TestTracingExportsTokenRequestSpans(t *testing.T) {
	col := tracingtest.Start(t)
	s := start(t, []string{"--listen", "127.0.0.1:0"}, []string{
		EnvPrefix + "WIT_JWKS_URL=http://127.0.0.1:1/jwks.json",
		EnvPrefix + "TRACING_OTLP_ENDPOINT=" + col.URL,
	})
	getJSON(t, s.URL+tts.PathMetadata, nil)
	getJSON(t, s.URL+tts.PathHealthz, nil)
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {"secret-subject-token"}}
	req, _ := http.NewRequest(http.MethodPost, s.URL+tts.PathToken, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Request-Id", "trace-test-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusOK {
		t.Fatal("a token request without credentials was answered 200")
	}
	_ = s.Stop() // flushes the spans (start's clean-up reports an error)
	if errs := col.Errors(); len(errs) > 0 {
		t.Fatalf("collector could not decode: %v", errs)
	}
	got := map[string]tracingtest.Span{}
	for _, sp := range col.Spans() {
		got[sp.Name] = sp
		if sp.Service != "dialogtrust-tts" {
			t.Errorf("service.name %q", sp.Service)
		}
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.String(), "secret") {
				t.Errorf("span %s attribute %s carries the subject token", sp.Name, a.Key)
			}
		}
	}
	tok, ok := got["POST "+tts.PathToken]
	if !ok {
		t.Fatalf("no token span; spans: %v", got)
	}
	if id, _ := tok.Attr(tracing.RequestIDAttribute); id != "trace-test-1" {
		t.Errorf("request id on the span = %q", id)
	}
	if _, ok := got["GET "+tts.PathMetadata]; !ok {
		t.Errorf("no metadata span: %v", got)
	}
	if len(got) != 2 {
		t.Errorf("spans %v: want the token request and the metadata only (no probes)", got)
	}
}

func TestTracingConfigRefused(t *testing.T) {
	for _, env := range [][]string{
		{EnvPrefix + "TRACING_OTLP_ENDPOINT=collector:4318"},
		{EnvPrefix + "TRACING_OTLP_ENDPOINT=http://127.0.0.1:4318", EnvPrefix + "TRACING_SAMPLE_RATIO=2"},
		{EnvPrefix + "TRACING_SAMPLE_RATIO=0.5"},
	} {
		cfg, _, err := configSpec.Load(nil, env, io.Discard)
		if err == nil {
			err = validate(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), "tracing") {
			t.Errorf("%v: %v", env, err)
		}
	}
}
