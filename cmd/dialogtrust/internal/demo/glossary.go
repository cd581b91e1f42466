package demo

// glossary explains, for a reader who does not know WIMSE or OAuth, the terms that the
// steps, the checks and the hops use.
func glossary() []Term {
	return []Term{
		{"trust domain", "a set of workloads under one operator, with its own WIT issuer and TTS (here a.example and b.example); a domain trusts another's credentials only as far as it is configured to"},
		{"workload", "a running piece of software: here the agents A1, A2 and B1 and a tool"},
		{"WIT", "Workload Identity Token: a short-lived signed token from the domain's WIT issuer that says which workload holds which key (WIMSE)"},
		{"WPT", "Workload Proof Token: a signature over one request with the key of a WIT, proving the sender holds it; this demo proves the same with an HTTP Message Signature"},
		{LabelWITProof, "a WIT together with a proof of its key (an HTTP signature or a WPT): who sent the request, checked by the receiver"},
		{"TTS", "Transaction Token Service: the domain's service that issues Txn-Tokens"},
		{LabelTxnToken, "a short-lived token from the TTS that carries who the work is for, what may be done (scope) and in which dialog, through every call in one trust domain; it never leaves its domain"},
		{"AS A, AS B", "the authorization servers of domain A and domain B (the same services as TTS A and TTS B): AS A vouches for its workload with a grant, AS B redeems it (OAuth identity chaining)"},
		{LabelJWTGrant, "a signed statement from AS A, for AS B only, that A2 works for this user: the one thing domain A gives domain B"},
		{"identity provider", "the service where a user signs in (OpenID Connect); it issues ID tokens that say who the user is to one application"},
		{LabelIDToken, "what the identity provider issues to A1 for the signed-in user; it stays in domain A"},
		{LabelIDJAG, "Identity Assertion JWT Authorization Grant: AS A's signed statement, for AS B only, that this user works through A1 (it names A1 as client_id); AS B redeems it like the JWT grant"},
		{LabelAccessToken, "what AS B issues for the grant: domain B's own credential for A2, bound to A2's WIT key"},
		{"dialog", "one conversation between agents, named by an identifier (D1, D2, D3) that the Dialog-Context header carries and the Txn-Token records"},
		{LabelDialogContext, "the HTTP header that names the dialog, its initiator and its state; covered by the sender's signature"},
		{"linked dialog", "a new dialog (D2) in another trust domain that continues the work of one (D1) without revealing it: D1's identifier never crosses"},
		{"tctx.dlg", "the member of a Txn-Token that records the dialog the token was issued for: the receiver checks it against the Dialog-Context"},
		{"provenance", "the initiator's own signature, forwarded by the next agent, so a tool can check who started the dialog"},
		{"handoff", "a signed offer from one agent (A2) to another (B1) to take over a piece of work, bound to the access token by its grant member; the receiver answers with signed statuses (accepted, completed)"},
		{"check", "one verification the demo makes and prints: passed, failed, or skipped (what cannot be seen from here)"},
	}
}
