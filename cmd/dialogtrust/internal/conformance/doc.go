// Package conformance runs the WIMSE conformance vectors (format wimse-conformance/v6,
// testdata/wimsey/SOURCE.md) against dialogtrust's own packages.
//
// The vectors (kanywst/wimsey, Apache-2.0; testdata/wimsey/LICENSE) are kept in
// testdata/wimsey, where the tests of this package and of package wic read them, and
// are built into the command (Vectors), so that "dialogtrust conformance" needs no
// files beside it.
//
// Every positive case re-issues the recorded bytes where the vector says so, and every
// negative case must be rejected with the recorded code; a rejection for another reason
// is a failure. Time is the vector's verify_now with zero leeway.
package conformance
