// Package archtest holds only tests: they check the import rules docs/library.md's
// "Architecture" section states (which layer may import what), from the import graph
// `go list` reports.
//
// Read whole_test.go first: TestWholeLayering reads the Architecture table itself and
// holds every import of the module to it (a lower layer, or a package beside it that the
// table names), so the drawing and the rule are one. layers_test.go keeps the rules the
// table's links column marks (no service module in the libraries, the pairs of services
// that never import each other), options_test.go the one clock option, and sdk_test.go
// the agent SDKs the core module never requires.
package archtest
