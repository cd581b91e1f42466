package chaining

import "github.com/dialogtrust/dialogtrust/oauth"

// DescribeIssued implements oauth.IssuedDescriber: what the audit trail (package
// audit) records of a grant AS A issued. The grant itself is recorded by its SHA-256
// only.
func (g *grantResult) DescribeIssued(is *oauth.Issued) {
	is.Token, is.Subject, is.Audience = g.resp.AccessToken, g.claims.Sub, g.claims.Aud
	if g.claims.Scope != nil {
		is.Scope = *g.claims.Scope
	}
}

// DescribeIssued implements oauth.IssuedDescriber: what the audit trail records of an
// access token AS B issued.
func (b *bearerResult) DescribeIssued(is *oauth.Issued) {
	is.Token, is.Subject, is.Audience, is.Scope = b.resp.AccessToken, b.claims.Sub, b.claims.Aud, b.claims.Scope
}
