package errcode

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Code is a stable, documented, machine-readable rejection reason.
type Code string

// Kind says whether a check failed or could not be completed.
type Kind int

const (
	// Failed: the input was checked and found bad.
	Failed Kind = iota
	// Incomplete: the check could not be completed (a dependency such as the replay
	// store or a JWKS endpoint did not answer). The request is still rejected.
	Incomplete
)

func (k Kind) String() string {
	if k == Incomplete {
		return "could_not_complete"
	}
	return "failed"
}

// Error is the error type of every rejection in dialogtrust.
type Error struct {
	Code   Code
	Kind   Kind
	Detail string // human-readable; never contains a whole token or proof
	Err    error  // wrapped cause, may be nil
}

func (e *Error) Error() string {
	msg := string(e.Code)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is(err, errcode.New(C, "")) match on the code alone.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// New returns a Failed error with the given code.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Kind: Failed, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns a Failed error with the given code wrapping cause.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Kind: Failed, Detail: fmt.Sprintf(format, args...), Err: cause}
}

// Unavailable returns an Incomplete error: a check could not be completed.
func Unavailable(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Kind: Incomplete, Detail: fmt.Sprintf(format, args...), Err: cause}
}

// CodeOf returns the code of err, or Unmapped when err carries none (nil gives "").
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Unmapped
}

// KindOf returns the kind of err; errors without a code count as Failed.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Failed
}

// Is reports whether err carries code.
func Is(err error, code Code) bool { return CodeOf(err) == code }

// MaxEchoed is how many octets of a string chosen by the sender (a kid, an alg, a claim
// value, a member name) a detail or a log line repeats.
const MaxEchoed = 64

// Cut keeps sender-chosen text in error details and log lines short: s itself when it
// has at most MaxEchoed octets, else its first MaxEchoed octets (cut at a character
// boundary) and "...". Every detail that quotes such a string passes it through Cut, so
// a 4 KB kid is never sent back or logged whole.
func Cut(s string) string {
	if len(s) <= MaxEchoed {
		return s
	}
	i := MaxEchoed
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
