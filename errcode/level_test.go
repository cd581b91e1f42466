package errcode

import (
	"errors"
	"log/slog"
	"testing"
)

// A refusal's log line is an error only when the check could not be completed or the
// failure is ours; the caller's mistakes, which anyone can make at will, are info.
func TestLogLevel(t *testing.T) {
	byLevel := map[slog.Level][]error{
		slog.LevelInfo:  {New(InvalidSignature, "x"), New(InvalidRequest, "x")},
		slog.LevelError: {Unavailable(KeysUnavailable, nil, "x"), New(Internal, "x"), Wrap(Internal, errors.New("no code"), "internal error")},
	}
	for want, errs := range byLevel {
		for _, err := range errs {
			if got := LogLevel(err); got != want {
				t.Errorf("%v: %v, want %v", err, got, want)
			}
		}
	}
}
