package proxy

import "time"

// SetEgressHeaderTimeout shortens the wait for an upstream's response header on the
// egress's own transport, for the tests.
func SetEgressHeaderTimeout(c *EgressConfig, d time.Duration) { c.headerTimeout = d }

// SetIngressHeaderTimeout shortens the wait for the application's response header on
// the ingress's own transport, for the tests.
func SetIngressHeaderTimeout(c *IngressConfig, d time.Duration) { c.headerTimeout = d }
