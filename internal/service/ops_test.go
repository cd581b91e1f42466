package service

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/dialogtrust/dialogtrust/errcode"
)

type pinger struct{ err error }

func (p pinger) Ping(context.Context) error { return p.err }

func opsServer(t *testing.T, rd Readiness) *httptest.Server {
	t.Helper()
	r := chi.NewRouter()
	MountOps(r, NewRegistry(), rd)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

func getProblem(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

// /readyz: 200 when every check passes; else a problem document, 503, could not be
// completed, with the failing check's code. A check without a code of its own (the
// Redis client's PING, a store's Ping) is store_unavailable, in both services.
func TestReadyz(t *testing.T) {
	key := func() bool { return true }
	down := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	for name, c := range map[string]struct {
		rd   Readiness
		code string
	}{
		"ready":        {Readiness{SigningKey: key, Store: pinger{}, Checks: []ReadyCheck{func(context.Context) error { return nil }}}, ""},
		"no key":       {Readiness{SigningKey: func() bool { return false }}, "keys_unavailable"},
		"store ping":   {Readiness{SigningKey: key, Store: pinger{down}}, "store_unavailable"},
		"redis check":  {Readiness{SigningKey: key, Checks: []ReadyCheck{func(context.Context) error { return down }}}, "store_unavailable"},
		"keys check":   {Readiness{SigningKey: key, Checks: []ReadyCheck{func(context.Context) error { return errcode.Unavailable(errcode.KeysUnavailable, down, "JWKS") }}}, "keys_unavailable"},
		"store first":  {Readiness{SigningKey: key, Store: pinger{down}, Checks: []ReadyCheck{func(context.Context) error { return errcode.Unavailable(errcode.KeysUnavailable, nil, "JWKS") }}}, "store_unavailable"},
		"not a pinger": {Readiness{SigningKey: key, Store: struct{}{}}, ""},
	} {
		c.rd.Logger = slog.New(slog.DiscardHandler)
		srv := opsServer(t, c.rd)
		status, body := getProblem(t, srv.URL+PathReadyz)
		if c.code == "" {
			if status != 200 || body["status"] != "ready" {
				t.Errorf("%s: %d %v", name, status, body)
			}
			continue
		}
		if status != 503 || body["code"] != c.code || body["kind"] != "could_not_complete" {
			t.Errorf("%s: %d %v, want 503 %s", name, status, body, c.code)
		}
	}
}

// /healthz answers without checking anything; /metrics has the Go and process
// collectors.
func TestHealthzAndMetrics(t *testing.T) {
	srv := opsServer(t, Readiness{SigningKey: func() bool { return false }})
	if status, body := getProblem(t, srv.URL+PathHealthz); status != 200 || body["status"] != "ok" {
		t.Fatalf("%d %v", status, body)
	}
	res, err := http.Get(srv.URL + PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"go_goroutines", "process_start_time_seconds"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
