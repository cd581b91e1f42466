package httpbody

import (
	"errors"
	"io"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Read reads r to its end and returns what it held, at most max octets; what names
// the body in the errors ("request body", "handoff body"). A nil r or http.NoBody is
// an empty body (nil). It asks r for at most max+1 octets: one past the bound tells a
// body over it from one that fits exactly. Over the bound, or an
// *http.MaxBytesError from an http.MaxBytesReader the server put in front, is
// errcode.BodyTooLarge; any other read error is errcode.InvalidRequest with the cause
// kept. Read does not close r.
func Read(r io.Reader, max int64, what string) ([]byte, error) {
	if r == nil || r == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) || err == nil && int64(len(b)) > max {
		return nil, errcode.New(errcode.BodyTooLarge, "the %s is over %d octets", what, max)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "the %s could not be read", what)
	}
	return b, nil
}
