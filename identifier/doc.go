// Package identifier parses and validates workload identifiers
// (draft-ietf-wimse-identifier-03; wimse.md section 1).
//
// Everything is in identifier.go (ID, Parse).
//
// Two schemes are accepted: spiffe:// (SPIFFE IDs, checked finally by go-spiffe's
// spiffeid) and wimse://. Input that is not in canonical form is rejected, never
// repaired (section 4.1 of the identifier draft): an uppercase trust domain, a
// trailing slash, an empty or dot segment, a lowercase or needless percent-escape are
// each a rejection with its own code. Because only canonical identifiers are accepted,
// comparison is byte-for-byte over the whole URI (section 4.3, ID-5): use ID.Equal or ==.
//
// The wimse path follows the wimsey conformance vectors (in
// cmd/dialogtrust/internal/conformance/testdata; RFC 3986 pchar: unreserved,
// sub-delims, ':' and '@', plus upper-case percent-escapes of characters that are not
// unreserved). The spiffe path is the narrower SPIFFE set [A-Za-z0-9._-].
package identifier
