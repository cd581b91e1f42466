package adaptertest

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
)

// Seen is what a server saw.
type Seen struct {
	mu       sync.Mutex
	requests []http.Header // every HTTP request, as it arrived
	calls    []*dialog.Verified
	runs     int
}

// Header records a request as it arrived.
func (s *Seen) Header(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Header.Clone())
}

// Call records a run of the work, with what the receiver verified.
func (s *Seen) Call(v *dialog.Verified) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, v)
	s.runs++
}

// Snapshot is the requests' header fields and the calls' verifications so far.
func (s *Seen) Snapshot() ([]http.Header, []*dialog.Verified) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.requests...), append([]*dialog.Verified(nil), s.calls...)
}

// Count is how many times the work ran.
func (s *Seen) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// Recorder keeps the problem code of every refused response the client got.
type Recorder struct {
	Base http.RoundTripper   // default http.DefaultTransport
	Edit func(*http.Request) // changes the signed request before it leaves (tampering)

	mu    sync.Mutex
	codes []string
}

// RoundTrip sends req through Base and records the code of a refusal.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.Edit != nil {
		r.Edit(req)
	}
	base := r.Base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	code := ""
	if e := problem.Read(res.StatusCode, b); e != nil {
		code = string(errcode.CodeOf(e))
	}
	r.mu.Lock()
	r.codes = append(r.codes, code)
	r.mu.Unlock()
	return res, nil
}

// Last is the code of the last refusal ("" when none).
func (r *Recorder) Last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.codes) == 0 {
		return ""
	}
	return r.codes[len(r.codes)-1]
}
