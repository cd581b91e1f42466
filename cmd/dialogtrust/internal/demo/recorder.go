package demo

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
)

// recorder keeps every request that reaches domain B, for the domain-separation check:
// at the receiving server (wrap: B1 always, domain B's WIT issuer and TTS when they run
// in this process) and at the sender (transport: requests of this process's workloads
// to the watched hosts, domain B's deployed services).
type recorder struct {
	mu    sync.Mutex
	seen  [][]byte
	watch map[string]bool // hosts (host:port) recorded at the sender
}

func (rec *recorder) add(r *http.Request, body []byte) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s %s\n", r.Method, r.URL)
	_ = r.Header.Write(&buf)
	buf.Write(body)
	rec.mu.Lock()
	rec.seen = append(rec.seen, buf.Bytes())
	rec.mu.Unlock()
}

// wrap records at the server.
func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.add(r, body)
		next.ServeHTTP(w, r)
	})
}

// watchURL records, at the sender, every request to u's host.
func (rec *recorder) watchURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return fmt.Errorf("cannot watch %q", u)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.watch == nil {
		rec.watch = map[string]bool{}
	}
	rec.watch[p.Host] = true
	return nil
}

func (rec *recorder) watched(host string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.watch[host]
}

// transport records the requests to watched hosts as they leave, headers and body
// complete (it is the last step before the wire: signatures and tokens are already on
// them), and passes every request on to base.
func (rec *recorder) transport(base http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if !rec.watched(r.URL.Host) {
			return base.RoundTrip(r)
		}
		var body []byte
		out := r
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				return nil, err
			}
			body = b
			// A RoundTripper must not modify the caller's request.
			out = r.Clone(r.Context())
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		rec.add(out, body)
		return base.RoundTrip(out)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (rec *recorder) contains(needle string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, b := range rec.seen {
		if bytes.Contains(b, []byte(needle)) {
			return true
		}
	}
	return false
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.seen)
}
