// Package bench holds the benchmarks that must run together: the raw signature
// operations (crypto/ecdsa, crypto/ed25519) and the credential paths built on them, so
// that ratios come from one run on one machine (DEVELOPERS.md, "Speed is measured").
//
// Read ratio_test.go first (how the ratios are taken), then bench_test.go (the
// benchmarks).
//
//	go test -run '^$' -bench . -benchmem ./internal/bench/
package bench
