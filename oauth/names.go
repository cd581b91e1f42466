package oauth

// URNs of the token exchange profile (oauth.md 1.3, 1.4; RFC 8693 section 3) and of
// identity chaining (oauth.md 2-4; RFC 7523).
const (
	GrantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	// GrantTypeJWTBearer is the RFC 7523 grant (AS B).
	GrantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

	TokenTypeTxnToken     = "urn:ietf:params:oauth:token-type:txn_token"
	TokenTypeAccessToken  = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeIDToken      = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeJWT          = "urn:ietf:params:oauth:token-type:jwt"
	TokenTypeRefreshToken = "urn:ietf:params:oauth:token-type:refresh_token"
	TokenTypeSAML1        = "urn:ietf:params:oauth:token-type:saml1"
	TokenTypeSAML2        = "urn:ietf:params:oauth:token-type:saml2"
	TokenTypeSelfSigned   = "urn:ietf:params:oauth:token-type:self_signed"
	TokenTypeUnsignedJSON = "urn:ietf:params:oauth:token-type:unsigned_json"

	// TokenTypeTxnToken08 is the misspelt URN of the -08 example (oauth.md 1.1). It is
	// accepted as a requested_token_type from -08 peers, never emitted.
	TokenTypeTxnToken08 = "urn:ietf:params:oauth:token-type:txn-token"

	// ClientAssertionTypeJWTBearer is the client_assertion_type of private_key_jwt.
	ClientAssertionTypeJWTBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// ClientAssertionType is the typ of a private_key_jwt client assertion.
	ClientAssertionType = "client-authentication+jwt"
)

// OAuth error codes of RFC 6749 section 5.2 and RFC 8693 section 2.2.2, plus the two a
// token endpoint answers with when the fault is not the client's.
const (
	ErrInvalidRequest         = "invalid_request"
	ErrInvalidClient          = "invalid_client"
	ErrInvalidGrant           = "invalid_grant"
	ErrUnauthorizedClient     = "unauthorized_client"
	ErrUnsupportedGrantType   = "unsupported_grant_type"
	ErrInvalidScope           = "invalid_scope"
	ErrInvalidTarget          = "invalid_target"
	ErrServerError            = "server_error"
	ErrTemporarilyUnavailable = "temporarily_unavailable"
)

// Names of the grant handlers at a dialogtrust token endpoint (oauth.Handler.Name,
// Record.Handler): the TTS's token exchange for Txn-Tokens, identity chaining's AS A
// (grants) and AS B (access tokens for grants).
const (
	HandlerTxnToken             = "txn_token"
	HandlerChainingGrants       = "chaining_grants"
	HandlerChainingAccessTokens = "chaining_access_tokens"
)
