package graceful

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestDrain(t *testing.T) {
	var d Drainer
	srv := httptest.NewUnstartedServer(d.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})))
	srv.Config.ConnState = d.ConnState
	srv.Start()
	defer srv.Close()
	c := srv.Client()
	get := func() *http.Response {
		t.Helper()
		res, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	if res := get(); res.Close || res.Header.Get("Connection") == "close" {
		t.Fatal("before the drain the connection is kept alive")
	}
	if d.open.Load() != 1 {
		t.Fatalf("open connections %d, want 1", d.open.Load())
	}

	// The client's kept-alive connection holds the drain until its next request is
	// answered with Connection: close; then no connection is open and the drain ends.
	done := make(chan time.Time, 1)
	go func() {
		d.Drain(context.Background(), 10*time.Second)
		done <- time.Now()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !d.draining.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if res := get(); !res.Close {
		t.Fatal("a response during the drain must close the connection")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the drain did not end once no connection was open")
	}
	if d.open.Load() != 0 {
		t.Fatalf("open connections %d, want 0", d.open.Load())
	}
}

func TestDrainBounded(t *testing.T) {
	var d Drainer
	d.ConnState(nil, http.StateNew) // a connection that never closes
	start := time.Now()
	d.Drain(context.Background(), 50*time.Millisecond)
	if el := time.Since(start); el < 50*time.Millisecond || el > 5*time.Second {
		t.Fatalf("drain took %s, want about 50ms", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.Drain(ctx, time.Hour) // returns at once: ctx has ended
	if Duration(10*time.Second) != time.Second || Duration(time.Second) != 500*time.Millisecond {
		t.Fatal("Duration")
	}
}
