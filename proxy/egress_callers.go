package proxy

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// The egress signs as the workload for whoever reaches its listener, and every browser
// on the host reaches a loopback port: a web page whose name the attacker rebinds to
// 127.0.0.1 (DNS rebinding) sends the egress its own name as Host, and any page can
// send a cross-site request to 127.0.0.1 itself. Either would make the egress a
// confused deputy, fetching a Txn-Token and signing as the workload for the page
// (issue 22 point 6). So the egress answers only the names it listens as, and a browser
// only from an origin it allows, before it reads the body, fetches a token or signs.
//
// Host. On TCP the egress answers, by default, localhost, 127.0.0.1, [::1] and the IP
// literal of the listener's own address, each with the listener's port (a Host without
// a port means port 80): a rebound name is never among them, and neither is another
// local server's port whose Host a front proxy kept. EgressConfig.AllowedHosts replaces
// the list (a name the agent uses, a port that a container maps). On a Unix socket no
// browser connects, and the Host names nothing (curl sends "localhost", net/http the
// URL's host, node "localhost"): any Host passes unless AllowedHosts is given, which
// then applies there too.
//
// Origin. A request without Origin and without Sec-Fetch-Site is not a browser's
// (curl, Python, Go, Node's fetch, which sends Sec-Fetch-Mode but no Sec-Fetch-Site, the
// MCP and A2A SDKs) and passes. A browser sends Origin with every request but a GET or
// HEAD of its own origin or a no-cors one (an image, a navigation), and Sec-Fetch-Site
// with every request (Fetch Metadata, in every current browser). An Origin passes when
// it is in EgressConfig.AllowedOrigins or, on TCP, is the egress's own origin for the
// request's (allowed) Host, http://Host: a page the egress served itself; the MCP
// conformance suite's dns-rebinding-protection scenario sends that Origin with a valid
// Host and wants it answered, as a server of its own protects itself (the TypeScript
// SDK's localhost host validation). "null" (a sandboxed or file page, a redirect) never
// passes. A browser's request without an Origin passes only when it comes from the
// egress's own origin (Sec-Fetch-Site: same-origin), so that a cross-site image or
// navigation to the egress, which carries no Origin, is refused too.
//
// Both refusals come before every other check of the request: the caller is told only
// that the egress is not its to use.

// callers is the egress's policy of who may use it (above).
type callers struct {
	hosts   map[string]bool // AllowedHosts in lower case; nil: the default
	origins map[string]bool // AllowedOrigins in lower case
}

func newCallers(hosts, origins []string) (*callers, error) {
	c := &callers{origins: map[string]bool{}}
	if len(hosts) > 0 {
		c.hosts = map[string]bool{}
	}
	for _, h := range hosts {
		v, err := allowedHost(h)
		if err != nil {
			return nil, err
		}
		c.hosts[v] = true
	}
	for _, o := range origins {
		v, err := allowedOrigin(o)
		if err != nil {
			return nil, err
		}
		c.origins[v] = true
	}
	return c, nil
}

// CheckAllowedHosts checks EgressConfig.AllowedHosts: each a host name or IP literal
// (an IPv6 one in brackets) with an optional port, such as localhost:9480 or [::1]:9480.
func CheckAllowedHosts(hosts []string) error {
	for _, h := range hosts {
		if _, err := allowedHost(h); err != nil {
			return err
		}
	}
	return nil
}

// CheckAllowedOrigins checks EgressConfig.AllowedOrigins: each a serialized origin,
// scheme://host[:port] without a path, such as http://localhost:3000; never "null" or
// "*".
func CheckAllowedOrigins(origins []string) error {
	for _, o := range origins {
		if _, err := allowedOrigin(o); err != nil {
			return err
		}
	}
	return nil
}

// allowedHost reads an entry of AllowedHosts: its lower-case form.
func allowedHost(h string) (string, error) {
	v := strings.ToLower(h)
	u, err := url.Parse("http://" + v)
	if err != nil || u.Host != v || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || !hostSyntax(u) {
		return "", errcode.New(errcode.InvalidRequest, "allowed host %q: a host name or IP literal with an optional port, such as localhost:9480 or [::1]:9480", errcode.Cut(h))
	}
	return v, nil
}

// allowedOrigin reads an entry of AllowedOrigins: its lower-case form, which is how
// browsers serialize an origin's scheme and host.
func allowedOrigin(o string) (string, error) {
	v := strings.ToLower(o)
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" || v != u.Scheme+"://"+u.Host || !hostSyntax(u) {
		return "", errcode.New(errcode.InvalidRequest, "allowed origin %q: scheme://host[:port] without a path, such as http://localhost:3000 (never null or *)", errcode.Cut(o))
	}
	return v, nil
}

// hostSyntax reports whether u's host is a DNS name or an IP literal and its port, if
// any, a number from 1 to 65535.
func hostSyntax(u *url.URL) bool {
	name, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") || port != "" && !validPort(port) {
		return false
	}
	if strings.HasPrefix(u.Host, "[") {
		ip := net.ParseIP(name)
		return ip != nil && ip.To4() == nil
	}
	if name == "" || len(name) > 253 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == p
}

// check refuses a request the policy does not let use the egress.
func (c *callers) check(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	_, onUnix := local.(*net.UnixAddr)
	host := strings.ToLower(r.Host)
	if !c.hostAllowed(host, local, onUnix) {
		return errcode.New(errcode.HostNotAllowed, "Host %q is not a name this egress answers as (a name rebound to this address?): see egress allowed_hosts", errcode.Cut(r.Host))
	}
	switch origin := r.Header.Values("Origin"); {
	case len(origin) > 1:
		return errcode.New(errcode.OriginNotAllowed, "more than one Origin field")
	case len(origin) == 1:
		if !c.originAllowed(origin[0], host, onUnix) {
			return errcode.New(errcode.OriginNotAllowed, "Origin %q may not use this egress: see egress allowed_origins", errcode.Cut(origin[0]))
		}
		return nil
	}
	if site := r.Header.Values("Sec-Fetch-Site"); len(site) > 0 && (onUnix || len(site) != 1 || site[0] != "same-origin") {
		return errcode.New(errcode.OriginNotAllowed, "a browser's request (Sec-Fetch-Site %q) without an Origin: its origin cannot be told", errcode.Cut(strings.Join(site, ",")))
	}
	return nil
}

// hostAllowed reports whether host (lower case) is one the egress answers as on the
// connection whose local address is local (nil: not known, then any port).
func (c *callers) hostAllowed(host string, local net.Addr, onUnix bool) bool {
	if c.hosts != nil {
		return c.hosts[host]
	}
	if onUnix {
		return true
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "80"
	}
	if ta, ok := local.(*net.TCPAddr); ok {
		if port != strconv.Itoa(ta.Port) {
			return false
		}
		if ip := net.ParseIP(name); ip != nil && ip.Equal(ta.IP) {
			return true
		}
	}
	switch name {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// originAllowed reports whether origin may use the egress by a request naming host (an
// allowed one, lower case): one of AllowedOrigins or, on TCP, the egress's own.
func (c *callers) originAllowed(origin, host string, onUnix bool) bool {
	o := strings.ToLower(origin)
	return c.origins[o] || !onUnix && host != "" && o == "http://"+host
}
