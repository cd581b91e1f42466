package tts

import (
	"context"
	"strings"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// IssuanceDecider is an external decision point (an AuthZEN PDP: package authzen) the
// TTS asks after its own policy allowed an issuance and the claims are built, before
// anything is signed (issue 25), with an authz.Issuance. An error means the decision could not be made.
type IssuanceDecider interface {
	DecideIssuance(ctx context.Context, in *authz.Issuance) (authz.Decision, error)
}

// decide asks the configured IssuanceDecider, if any, about claims: nil when allowed;
// not_authorized (a failed check at the policy stage: unauthorized_client 400) when
// refused; decision_unavailable (incomplete: temporarily_unavailable 503) when the
// decision could not be made. Which rule decided and the decision point's reason are
// logged here and never put in the error, whose detail is sent.
func (s *Server) decide(ctx context.Context, req *oauth.Client, subj *Subject, claims *txntoken.Claims, requestID string) error {
	d := s.cfg.Decider
	if d == nil {
		return nil
	}
	in := &authz.Issuance{
		Requester: req.IDString(), RequesterTrustDomain: req.ID.TrustDomain(), Proof: req.Method,
		Audience: claims.Aud[0], Scopes: strings.Fields(claims.Scope),
		SubjectTokenType: subj.TokenType, SubjectIssuer: subj.Issuer, Subject: subj.Sub,
		Dialog: claims.Dialog(), Details: claims.Tctx, RequestContext: claims.Rctx,
	}
	if subj.ScopeKnown {
		in.SubjectScopes = subj.Scope
	}
	if subj.Input != nil {
		in.Replacement, in.Txn, in.CallChain = true, claims.Txn, claims.ReqChain
	}
	dec, err := d.DecideIssuance(ctx, in)
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "issuance decision unavailable", "request_id", requestID, "rule", dec.Rule, "requester", in.Requester, "error", err.Error())
		return at(stagePolicy, errcode.Unavailable(errcode.DecisionUnavailable, err, "the authorization decision could not be made"))
	case !dec.Allow:
		s.log.InfoContext(ctx, "issuance not authorized", "request_id", requestID, "rule", dec.Rule, "reason", dec.Reason, "requester", in.Requester, "aud", in.Audience)
		return at(stagePolicy, errcode.New(errcode.NotAuthorized, "not authorized by policy"))
	}
	return nil
}
