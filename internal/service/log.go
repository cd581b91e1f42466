package service

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// NewLogger is the services' JSON logger on w at level (debug, info, warn or error;
// "" is info).
func NewLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if level == "" {
		level = "info"
	}
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	return slog.New(NewJSONHandler(w, l)), nil
}

// JSONHandler is slog.JSONHandler with no option but the level (no source, no
// ReplaceAttr), which also writes a line already formatted as it formats a record
// (WriteJSONLine): the TTS builds the line of every token issued itself, in a pooled
// buffer, and hands it over for one Write. Loggers derived with With or WithGroup
// get slog's handler alone.
type JSONHandler struct {
	*slog.JSONHandler
	w *lockedWriter
}

// NewJSONHandler is the JSONHandler writing on w at level.
func NewJSONHandler(w io.Writer, level slog.Leveler) *JSONHandler {
	lw := &lockedWriter{w: w}
	return &JSONHandler{JSONHandler: slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: level}), w: lw}
}

// WriteJSONLine writes line, one JSON object and its newline formatted exactly as the
// handler formats a record (the caller checked Enabled), in one Write; line is not
// retained.
func (h *JSONHandler) WriteJSONLine(line []byte) error {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	_, err := h.w.w.Write(line)
	return err
}

// lockedWriter makes the handler's writes and WriteJSONLine's one sequence of whole
// lines on any io.Writer (slog's handler locks only its own).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Banner frames lines in asterisks on w, so that the development warning is not
// missed in a terminal full of JSON.
func Banner(w io.Writer, lines ...string) {
	width := 0
	for _, l := range lines {
		width = max(width, len(l))
	}
	rule := strings.Repeat("*", width+6)
	fmt.Fprintln(w, rule)
	for _, l := range lines {
		fmt.Fprintf(w, "*  %-*s  *\n", width, l)
	}
	fmt.Fprintln(w, rule)
}
