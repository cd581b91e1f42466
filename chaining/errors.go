package chaining

import "github.com/dialogtrust/dialogtrust/oauth"

// The steps of a request, which with the code decide the OAuth error (oauth.ErrorFor).
const (
	stageRequest = oauth.StageRequest // the parameters, the subject token (AS A)
	stageClient  = oauth.StageClient  // client (workload) authentication
	stagePolicy  = oauth.StagePolicy  // what the authenticated workload may ask for
	stageGrant   = oauth.StageGrant   // the JWT authorization grant (AS B): RFC 7523 invalid_grant
	stageIssue   = oauth.StageIssue   // building and signing
)

func at(s oauth.Stage, err error) error { return oauth.At(s, err) }
