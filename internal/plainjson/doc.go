// Package plainjson reads and writes the plain JSON of tokens without reflection where
// encoding/json's output is known, and with encoding/json everywhere else, so that the
// result is always encoding/json's, octet for octet (the fuzz tests of package txntoken
// and tts hold the two equal). It exists so that the Txn-Token credential (package
// txntoken) and the service minting it (package tts) share one copy.
//
// Read plainjson.go first (Decode and the writers), then scan.go (the scanners other
// packages walk JSON with).
//
// It is also the one home of the project's hand-written JSON scanning: ScanObject
// (the plain objects of WPT claims and token-request context, checked against
// encoding/json by FuzzScanObject), ScanNestedObject (the same form with nested plain
// objects: WIT and grant claims, FuzzScanNestedObject), the member scanners package
// handoff walks validated JSON with, and the nesting bound of token requests. (Package
// exactjson's walk, driven by Go types, is the other reader.)
//
// It implements no spec section: the JSON it handles is RFC 8259's, as JWT claim sets
// use it (RFC 7519 section 7).
package plainjson
