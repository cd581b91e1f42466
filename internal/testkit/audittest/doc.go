// Package audittest holds what tests of audit trails share: an in-memory audit.Sink
// whose records they read back. It is apart from internal/testkit because package
// audit imports oauth and httpsig, whose own tests import testkit. Read sink.go.
package audittest
