package errcode

import "log/slog"

// LogLevel is the level of a refusal's log line: error for a check that could not be
// completed (Incomplete) or a failure that is ours (Internal), info for the caller's
// mistakes, which the caller is told and which anyone can make at will.
func LogLevel(err error) slog.Level {
	if KindOf(err) == Incomplete || CodeOf(err) == Internal {
		return slog.LevelError
	}
	return slog.LevelInfo
}
