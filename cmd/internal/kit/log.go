package kit

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Log formats: LogJSON, the default, one JSON object a line for log collectors;
// LogText, slog's key=value lines, for people reading a terminal.
const (
	LogJSON = "json"
	LogText = "text"
)

// NewLogger is the services' logger on w at level (debug, info, warn or error; "" is
// info), in format (LogJSON or LogText; "" is LogJSON).
func NewLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if level == "" {
		level = "info"
	}
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "", LogJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case LogText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log.format %q: json or text", format)
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
