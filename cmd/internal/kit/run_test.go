package kit

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

func testProgram(built *int, closed *bool) Program[testConfig] {
	return Program[testConfig]{
		Name: "svc", Config: testSpec(),
		Check: func(c *testConfig) error {
			if c.Listen == "" {
				return errors.New("listen: required")
			}
			return nil
		},
		Build: func(ctx context.Context, c *testConfig, logger *slog.Logger) (_ *Server, err error) {
			*built++
			s := &Server{ShutdownTimeout: time.Second, Issuer: "https://svc.example", StartAttrs: []any{"extra", 1},
				Listening: "(test)", Development: &Development{Warning: "DEVELOPMENT MODE: test", Banner: []string{"svc: DEVELOPMENT MODE."}}}
			defer s.CloseOnError(&err)
			s.OnClose(func() { *closed = true })
			if err := s.Listen("127.0.0.1:0"); err != nil {
				return nil, err
			}
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
			if err := s.Handle(h, c.Tracing, "svc", logger); err != nil {
				return nil, err
			}
			return s, nil
		},
	}
}

// -check-config runs the checks and builds nothing.
func TestRunCheckConfig(t *testing.T) {
	var built int
	var closed bool
	var out bytes.Buffer
	if err := Run(t.Context(), testProgram(&built, &closed), []string{"-check-config"}, nil, &out, io.Discard, nil); err != nil || out.String() != "svc: configuration ok\n" || built != 0 {
		t.Fatalf("%v %q built %d", err, out.String(), built)
	}
	err := Run(t.Context(), testProgram(&built, &closed), []string{"--check-config", "--config", testkit.WriteTemp(t, "c.yaml", "listen: ''\n")}, nil, &out, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "listen: required") || built != 0 {
		t.Fatalf("%v built %d", err, built)
	}
	if err := Run(t.Context(), testProgram(&built, &closed), []string{"-h"}, nil, io.Discard, io.Discard, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if err := Run(t.Context(), testProgram(&built, &closed), []string{"--log-level", "loud"}, nil, io.Discard, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "log.level") {
		t.Fatalf("bad level: %v", err)
	}
}

// A run: the start is announced (log line, development warning and banner, listening
// line), the handler serves behind the bounds of httpserver, and the end of ctx stops
// it gracefully and closes what Build opened.
func TestRunServesAndStops(t *testing.T) {
	var built int
	var closed bool
	stdout, stderr := &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
	url, stop := startRun(t, testProgram(&built, &closed), stdout, stderr)
	wantBody(t, http.DefaultClient, url+"/", "hello")
	stop()
	if !closed {
		t.Fatal("what Build opened was not closed")
	}
	logs := stderr.String()
	for _, want := range []string{`"msg":"svc started","url":"` + url + `","issuer":"https://svc.example","config":"embedded development default","extra":1`,
		`"level":"WARN","msg":"DEVELOPMENT MODE: test"`, "*  svc: DEVELOPMENT MODE.  *", `"msg":"shutting down","timeout":"1s"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %s:\n%s", want, logs)
		}
	}
	if stdout.String() != "svc listening on "+url+" (test)\n" {
		t.Errorf("stdout %q", stdout.String())
	}
}

// The server Handle builds has every bound.
func TestHandleSetsBounds(t *testing.T) {
	s := &Server{}
	defer s.Close()
	if err := s.Handle(http.NotFoundHandler(), testConfig{}.Tracing, "svc", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	h := s.HTTP
	if h.ReadHeaderTimeout != httpserver.ReadHeaderTimeout || h.ReadTimeout != httpserver.ReadTimeout || h.WriteTimeout != httpserver.WriteTimeout ||
		h.IdleTimeout != httpserver.IdleTimeout || h.MaxHeaderBytes != httpserver.MaxHeaderBytes || h.ErrorLog == nil || h.ConnState == nil {
		t.Fatalf("%+v", h)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:80": true, "127.9.9.9:1": true, "0.0.0.0:80": false, "10.0.0.1:80": false,
		"localhost:80": false, "example.org:80": false, "127.0.0.1": false, ":80": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
	if !IsLoopback("localhost:80", "localhost") || IsLoopback("example.org:80", "localhost") {
		t.Error("names")
	}
}

func TestBanner(t *testing.T) {
	var b bytes.Buffer
	Banner(&b, "one", "three")
	if want := "***********\n*  one    *\n*  three  *\n***********\n"; b.String() != want {
		t.Fatalf("%q", b.String())
	}
}

// startRun runs p until stop is called: it returns the main listener's URL once the
// runner announces it, and stop ends the run and fails the test unless it ended
// without an error.
func startRun(t *testing.T, p Program[testConfig], stdout, stderr io.Writer) (url string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p, nil, nil, stdout, stderr, func(u string) { urls <- u }) }()
	select {
	case url = <-urls:
	case err := <-done:
		cancel()
		t.Fatal(err)
	}
	return url, func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// wantBody GETs url with c and fails unless the body is want.
func wantBody(t *testing.T, c *http.Client, url, want string) {
	t.Helper()
	if _, b := testkit.GetWith(t, c, url); string(b) != want {
		t.Fatalf("%q", b)
	}
}

// moreHandler answers "more" on a further listener.
var moreHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "more") })

// withMore is testProgram whose Build, after the main listener, opens a further one
// with open; the further listener's URL comes on the channel.
func withMore(open func(s *Server, logger *slog.Logger) (string, error)) (Program[testConfig], <-chan string) {
	var built int
	var closed bool
	p := testProgram(&built, &closed)
	more := make(chan string, 1)
	build := p.Build
	p.Build = func(ctx context.Context, c *testConfig, logger *slog.Logger) (*Server, error) {
		s, err := build(ctx, c, logger)
		if err != nil {
			return nil, err
		}
		u, err := open(s, logger)
		if err != nil {
			s.Close()
			return nil, err
		}
		more <- u
		return s, nil
	}
	return p, more
}

// A further listener serves beside the main one and stops with it.
func TestHandleMore(t *testing.T) {
	p, more := withMore(func(s *Server, logger *slog.Logger) (string, error) {
		return s.HandleMore("127.0.0.1:0", nil, moreHandler, logger)
	})
	_, stop := startRun(t, p, io.Discard, io.Discard)
	u := <-more
	wantBody(t, http.DefaultClient, u+"/", "more")
	stop()
	if _, err := http.Get(u + "/"); err == nil {
		t.Fatal("the further listener still answers after the stop")
	}
}
