// Package archtest holds only tests: they check the import rules docs/library.md's
// "Architecture" section states (which layer may import what), from the import graph
// `go list` reports.
package archtest
