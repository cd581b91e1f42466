package service

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// The services' handler writes every record as slog.JSONHandler does, derived loggers
// included, and honours its level.
func TestJSONHandlerFormatsAsSlog(t *testing.T) {
	var got, want bytes.Buffer
	h := NewJSONHandler(&got, slog.LevelInfo)
	ref := slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelInfo})
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.UTC)
	for _, pair := range []struct{ h, ref slog.Handler }{
		{h, ref},
		{h.WithAttrs([]slog.Attr{slog.String("svc", "tts")}), ref.WithAttrs([]slog.Attr{slog.String("svc", "tts")})},
		{h.WithGroup("g"), ref.WithGroup("g")},
	} {
		r := slog.NewRecord(at, slog.LevelWarn, "a \"message\"\n", 0)
		r.AddAttrs(slog.String("k", "v<&>\u2028"), slog.Int64("n", -3), slog.Any("e", nil))
		for _, x := range []slog.Handler{pair.h, pair.ref} {
			if err := x.Handle(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got.String() != want.String() {
		t.Fatalf("got\n%s\nwant\n%s", got.String(), want.String())
	}
	if h.Enabled(context.Background(), slog.LevelDebug) || !h.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("level not honoured")
	}
}

// WriteJSONLine writes the line as given, and its lines and the handler's never
// interleave, whatever the writer.
func TestJSONHandlerWriteJSONLine(t *testing.T) {
	var buf bytes.Buffer
	h := NewJSONHandler(&buf, slog.LevelInfo)
	logger := slog.New(h)
	line := []byte(`{"time":"2026-12-01T18:00:00Z","level":"INFO","msg":"m","k":"v"}` + "\n")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if i%2 == 0 {
					if err := h.WriteJSONLine(line); err != nil {
						t.Error(err)
					}
				} else {
					logger.Info("record", "k", strings.Repeat("x", 100))
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	given := 0
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("not one JSON object: %q", l)
		}
		if l+"\n" == string(line) {
			given++
		}
	}
	if len(lines) != 400 || given != 200 {
		t.Fatalf("%d lines, %d of them the given one", len(lines), given)
	}
}
