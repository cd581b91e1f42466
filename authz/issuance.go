package authz

// Issuance is what the TTS asks an external decision point about after its own policy
// allowed an issuance and the claims it would sign are built, before anything is
// signed: only what the TTS authenticated, validated or is about to sign
// (tts.IssuanceDecider asks it; authzen.IssuanceRequest maps it to AuthZEN).
type Issuance struct {
	// Requester is the authenticated workload asking for the token, RequesterTrustDomain
	// its trust domain and Proof how it authenticated (the client authentication method).
	Requester            string
	RequesterTrustDomain string
	Proof                string
	// Audience is the trust domain the token is for and Scopes the scopes it would carry.
	Audience string
	Scopes   []string
	// Replacement says whether the subject token is a Txn-Token being replaced; then Txn
	// is its txn and CallChain the call chain of requesters of the new token.
	Replacement bool
	Txn         string
	CallChain   []string
	// SubjectTokenType, SubjectIssuer and Subject describe the validated subject token
	// (Subject is the Txn-Token's sub); SubjectScopes its scope when known.
	SubjectTokenType string
	SubjectIssuer    string
	Subject          string
	SubjectScopes    []string
	// Dialog is the dialog (tctx.dlg), Details the tctx members and RequestContext the
	// rctx members the token would carry.
	Dialog         string
	Details        map[string]any
	RequestContext map[string]any
}
