package proxy

import (
	"context"
	"net"
	"net/http"
)

// MaxIdleConnsPerUpstream is how many idle connections the proxy's own transports keep
// per upstream host: the egress's and the ingress's default transports, the boundary
// route's clients of AS A and AS B, and the command's Txn-Token Service clients. net/http
// keeps http.DefaultMaxIdleConnsPerHost (2), so with more than two requests in flight to
// one host every further request dialed a new connection and closed it afterwards (a
// dial, an accept and a socket in TIME_WAIT per request), which made the pair cost far
// more under concurrency than one request at a time. 64 covers the concurrency of a
// sidecar's agent; beyond it connections are still opened as needed (there is no limit
// on connections per host), only not kept. A transport given in the configuration
// (EgressConfig.Base, IngressConfig.Transport, BoundaryRoute.HTTPClient) is used as it is.
const MaxIdleConnsPerUpstream = 64

// upstreamTransport is the transport a side of the proxy reaches its upstreams with
// when none is configured: net/http's default without an environment proxy (the
// proxy is the proxy: an environment one would see the credentials), keeping
// MaxIdleConnsPerUpstream idle connections per host. No ResponseHeaderTimeout: each
// request's wait is upstreamWait's, and covers the body of a response read whole too.
func upstreamTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConnsPerHost = MaxIdleConnsPerUpstream
	return tr
}

// ingressTransport is the ingress's default transport: upstreamTransport, and for an
// application on a Unix socket net/http's own client over the socket: every
// connection, whatever the URL's host, goes to the application's socket.
func ingressTransport(socket string) *http.Transport {
	tr := upstreamTransport()
	if socket != "" {
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		}
	}
	return tr
}
