// Package servicetest runs a service command (cmd/tts, cmd/wit-issuer) inside the test
// process, through the same run function its main calls, and stops it as SIGTERM
// would (by cancelling the context). Tests only.
package servicetest
