package kit

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
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
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
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
