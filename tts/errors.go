package tts

import "github.com/dialogtrust/dialogtrust/oauth"

// The steps of a token request, which with the code decide the OAuth error
// (oauth.ErrorFor).
const (
	stageRequest = oauth.StageRequest // the parameters
	stageClient  = oauth.StageClient  // client (workload) authentication
	stagePolicy  = oauth.StagePolicy  // what the authenticated workload may ask for
	stageSubject = oauth.StageSubject // the subject token
	stageScope   = oauth.StageScope   // scope evaluation
	stageIssue   = oauth.StageIssue   // building and signing the token
)

func at(s oauth.Stage, err error) error { return oauth.At(s, err) }
