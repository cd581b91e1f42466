// Package faulttest holds fault and load tests that run the real binaries: cmd/wit-issuer
// and cmd/tts, built once per test run with `go build -o` into a temporary directory,
// and redis-server processes started by the tests on free loopback ports. They cover
// what unit tests cannot: Redis stopped and restarted under load, two TTS replicas
// sharing one Redis, signing-key rotation under load with receivers verifying through
// the JWKS, SIGTERM under load, a five-minute soak at half capacity, and a Redis
// Sentinel failover under a load of claims (through the store the services open), and
// two TTS replicas rotating their keys in one SoftHSM2 token (PKCS#11).
//
// Read harness_test.go first (building and running the binaries and redis-server), then
// the test file of the fault in question (redis_test.go, replicas_test.go,
// rotation_test.go, sentinel_test.go, sigterm_test.go, soak_test.go, pkcs11_test.go ...).
//
// The tests run only when DIALOGTRUST_FAULT_TESTS=1 (they take minutes and measure
// the machine) and skip otherwise; with CI=true and that variable set, a missing
// redis-server fails them instead of skipping. .ci/fault runs them and prints a
// summary; docs/reliability.md describes each test, its criteria and the figures of a
// run.
//
// Every process a test starts is stopped by its PID when the test ends, every loop is
// bounded in count and in time, and all traffic goes to 127.0.0.1.
package faulttest
