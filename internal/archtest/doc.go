// Package archtest holds only tests: they check the import rules docs/library.md's
// "Architecture" section states (which layer may import what), from the import graph
// `go list` reports.
//
// Read layers_test.go first (the layering rule over the import graph), then
// sdk_test.go.
package archtest
