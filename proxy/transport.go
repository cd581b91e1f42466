package proxy

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
