// Package proc starts and stops the peer processes of the interoperability tests: each
// process writes to a log file in the test's directory, is stopped by its pid when the
// test ends (SIGTERM, then SIGKILL after a grace period), and has its log's tail shown
// when the test failed. It also finds free loopback ports and waits for readiness with
// a deadline instead of sleeping.
package proc
