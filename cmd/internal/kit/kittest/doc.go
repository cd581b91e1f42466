// Package kittest runs a service command (cmd/tts, cmd/wit-issuer) inside the test
// process, through the same run function its main calls, and stops it as SIGTERM
// would (by cancelling the context); Build builds a command for the tests that need
// it as a real process; CA writes the certificates and keys of the TLS tests. Tests
// only.
package kittest
