package proxy

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzEgressCallers: whatever Host, Origin and Sec-Fetch-Site a caller sends, the
// default policy on a TCP listener at 127.0.0.1:9481 lets through only a loopback name
// at that port, an Origin only when it is http:// and that Host, and a browser's request
// without an Origin only from the same origin (issue 22 point 6).
func FuzzEgressCallers(f *testing.F) {
	for _, s := range [][3]string{
		{"127.0.0.1:9481", "", ""},
		{"localhost:9481", "http://localhost:9481", "same-origin"},
		{"[::1]:9481", "", "cross-site"},
		{"evil.example.com:9481", "http://evil.example.com:9481", ""},
		{"LOCALHOST:9481", "HTTP://LOCALHOST:9481", ""},
		{"localhost", "null", "none"},
		{"127.0.0.1:09481", "", "same-origin"},
		{"[::ffff:127.0.0.1]:9481", "", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	c, err := newCallers(nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9481}
	f.Fuzz(func(t *testing.T, host, origin, site string) {
		r := &http.Request{Host: host, Header: http.Header{}}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		r = r.WithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, net.Addr(local)))
		if c.check(r) != nil {
			return
		}
		h := strings.ToLower(host)
		name, port, err := net.SplitHostPort(h)
		if err != nil || port != "9481" || (name != "localhost" && !net.ParseIP(name).Equal(local.IP) && name != "::1") {
			t.Fatalf("Host %q passed", host)
		}
		if origin != "" && strings.ToLower(origin) != "http://"+h {
			t.Fatalf("Origin %q passed with Host %q", origin, host)
		}
		if origin == "" && site != "" && site != "same-origin" {
			t.Fatalf("Sec-Fetch-Site %q passed without an Origin", site)
		}
	})
}

// FuzzAllowedEntries: an entry of allowed_hosts or allowed_origins that is taken is a
// plain authority or a plain origin, in lower case, never a pattern.
func FuzzAllowedEntries(f *testing.F) {
	for _, s := range []string{"localhost:9481", "[::1]:9481", "a1-egress.internal", "http://localhost:3000", "null", "*", "http://a/b", "x@y", "[::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := allowedHost(s); err == nil {
			u, perr := url.Parse("http://" + v)
			if perr != nil || u.Host != v || v != strings.ToLower(v) || strings.ContainsAny(v, "*/@?# ") {
				t.Fatalf("allowed host %q taken as %q", s, v)
			}
		}
		if v, err := allowedOrigin(s); err == nil {
			u, perr := url.Parse(v)
			if perr != nil || v != u.Scheme+"://"+u.Host || v == "null" || strings.ContainsAny(u.Host, "*/@?# ") {
				t.Fatalf("allowed origin %q taken as %q", s, v)
			}
		}
	})
}
