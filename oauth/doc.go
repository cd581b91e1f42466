// Package oauth is the OAuth token endpoint layer shared by the Transaction Token
// Service and the identity-chaining authorization servers: the names of RFC 6749,
// RFC 7523 and RFC 8693 (grant types, token types, error codes).
package oauth
