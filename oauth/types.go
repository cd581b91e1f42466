package oauth

// ErrorResponse is the JSON body of a refused token request: RFC 6749 section 5.2's
// error and error_description, plus dialogtrust's stable code and its kind ("failed" or
// "could_not_complete", dialog-binding section 12).
type ErrorResponse struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description,omitempty"`
	Code             string `json:"code"`
	Kind             string `json:"kind"`
}

// TokenResponse is the token endpoint's successful answer: the Txn-Token response (oauth.md 1.6; RFC 8693 section 2.2.1) and the identity-chaining grant and access-token responses.
type TokenResponse struct {
	AccessToken     string `json:"access_token"`
	IssuedTokenType string `json:"issued_token_type"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	Scope           string `json:"scope"`
	// Resource is the resource an AS says it granted (the answer to an ID-JAG naming
	// one, chaining); a Txn-Token response has none (AppendJSON writes none).
	Resource string `json:"resource,omitempty"`
}

// Metadata is the RFC 8414 authorization server metadata of a token endpoint: the TTS's and the identity-chaining authorization servers' (oauth.md 5.2, Q3:
// Transaction Tokens define no discovery; this is the proposed one). response_types_supported
// is omitted although RFC 8414 calls it REQUIRED: a TTS has no authorization endpoint,
// any value would be false, and empty arrays MUST be omitted (Q6).
type Metadata struct {
	Issuer                                     string   `json:"issuer"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	JWKSURI                                    string   `json:"jwks_uri"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	// The following are dialogtrust's: the token types the endpoint issues and accepts,
	// and the trust domains it serves (the audience values).
	IssuedTokenTypesSupported  []string `json:"issued_token_types_supported"`
	SubjectTokenTypesSupported []string `json:"subject_token_types_supported"`
	TrustDomainsSupported      []string `json:"trust_domains_supported"`
	// IdentityChainingRequestedTokenTypesSupported is draft-ietf-oauth-identity-chaining
	// section 3 (oauth.md 2.5): set through Config.AmendMetadata when identity chaining
	// is served at this token endpoint.
	IdentityChainingRequestedTokenTypesSupported []string `json:"identity_chaining_requested_token_types_supported,omitempty"`
	// AuthorizationGrantProfilesSupported is draft-ietf-oauth-identity-assertion-authz-grant
	// section 7: the grant profiles (the ID-JAG's) a jwt-bearer AS processes; never a
	// list of the issuers it trusts (section 8.4).
	AuthorizationGrantProfilesSupported []string `json:"authorization_grant_profiles_supported,omitempty"`
}
