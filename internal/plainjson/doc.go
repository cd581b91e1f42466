// Package plainjson writes the plain JSON of tokens without reflection where
// encoding/json's output is known, and with encoding/json everywhere else, so that the
// result is always encoding/json's, octet for octet (the fuzz tests of package txntoken
// and tts hold the two equal). It exists so that the Txn-Token credential (package
// txntoken) and the service minting it (package tts) share one copy. (Reading JSON
// from the network is package netjson's.)
//
// Read plainjson.go first (the writers).
//
// It implements no spec section: the JSON it writes is RFC 8259's, as JWT claim sets
// use it (RFC 7519 section 7).
package plainjson
