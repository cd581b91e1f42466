// Package oauth is the OAuth token endpoint layer shared by the Transaction Token
// Service and the identity-chaining authorization servers: the names of RFC 6749,
// RFC 7523 and RFC 8693 (grant types, token types, error codes), the token response
// (RFC 8693 section 2.2.1), the error response (RFC 6749 section 5.2, with dialogtrust's
// stable code and kind) and the RFC 8414 metadata document (oauth.md 5.2).
//
// TokenClient is a workload's side of a token endpoint (a token request proved with its
// WIT, the answer or error read back) and Discover reads RFC 8414 metadata (sections 3.1, 3.3).
package oauth
