// Package conformance runs the WIMSE conformance vectors (format wimse-conformance/v6,
// shared/conformance/wimsey/SOURCE.md) against dialogtrust's own packages.
//
// Every positive case re-issues the recorded bytes where the vector says so, and every
// negative case must be rejected with the recorded code; a rejection for another reason
// is a failure. Time is the vector's verify_now with zero leeway.
package conformance
