// Package proxyservice is the program of `dialogtrust proxy` (docs/proxy.md): its
// configuration (config.go: the file format, the environment overrides and flags; the
// embedded default has neither side and is refused), the checks -check-config makes
// (check.go; recipient.go warns of what an ingress will likely refuse), and Build
// (build.go), which turns a configuration into the server the service runner
// (cmd/internal/kit) runs: the egress and the ingress of package proxy, the workload's
// WIT (workloadapi.go: from its issuer, with the Workload API's X.509-SVID), the WIT and
// Txn-Token trust, the replay store and records, and the operational routes. Read
// program.go, then build.go.
//
// It is a package of its own, not command dialogtrust's main, so that two commands run
// the same proxy: `dialogtrust proxy`, and `dialogtrust dev --proxies`, which runs a
// pair of them beside the development services. Only cmd/ imports it.
//
// It implements dialog-binding sections 5, 9, 11 and 12 through package proxy, and the
// handoff-context receiver through package handoff; it wires, it decides nothing.
package proxyservice
