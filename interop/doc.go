// Package interop holds the tests that run dialogtrust against real software no one
// here wrote: SPIRE (spire-server and spire-agent v1.13.3) issuing the X.509-SVIDs the
// WIT issuer authenticates workloads by, go-spiffe's WIT-SVID validator, and Ory Hydra
// v2.3.0 as another trust domain's authorization server, and the A2A JavaScript SDK
// (@a2a-js/sdk 1.3.0, A2A 1.0, run by node from interop/js) as the other side of
// handoff carriage in A2A 1.0 (handoff-context section 6), and, with the TypeScript
// MCP SDK (@modelcontextprotocol/sdk 1.32.2), as the agents and applications on both
// sides of a pair of `dialogtrust proxy` processes that make and check handoff offers
// (issue 15; docs/proxy.md), and the MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.16, under the node 22 of npm's node package,
// from interop/conformance) against our everything server on that SDK, directly and
// through such a pair (issue 22; docs/interop.md). It is a module of its own so
// that the core module carries none of those peers' dependencies; the peers themselves
// are pinned as Go tools in interop/tools/<peer>/go.mod and built by .ci/peers.
//
// A test finds a peer's binary through DIALOGTRUST_SPIRE_SERVER, DIALOGTRUST_SPIRE_AGENT
// or DIALOGTRUST_HYDRA, node on PATH with `npm ci` run in interop/js, and node 22 with
// the suite after `npm ci` in interop/conformance; without it the
// test skips, except under CI=true, where it fails.
package interop
