module github.com/dialogtrust/dialogtrust

go 1.26.0

require (
	github.com/dunglas/httpsfv v1.0.2
	github.com/lestrrat-go/jwx/v2 v2.1.7
	github.com/redis/go-redis/v9 v9.23.0
	github.com/spiffe/go-spiffe/v2 v2.9.0
	github.com/yaronf/httpsign v0.3.2
	golang.org/x/crypto v0.53.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/decred/dcrd/dcrec/secp256k1/v4 v4.4.1 // indirect
	github.com/goccy/go-json v0.10.6 // indirect
	github.com/lestrrat-go/blackmagic v1.0.4 // indirect
	github.com/lestrrat-go/httpcc v1.0.1 // indirect
	github.com/lestrrat-go/httprc v1.0.6 // indirect
	github.com/lestrrat-go/iter v1.0.2 // indirect
	github.com/lestrrat-go/option v1.0.1 // indirect
	github.com/segmentio/asm v1.2.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
