package tts

import (
	"context"
	"net/http"

	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// checkRevoked refuses a token whose dialog, workloads or transaction the operator
// revoked (issue 26; Config.Revocations): the requester, the subject, the requesters
// of a replaced token, the token's txn and dialog (a replacement never changes the
// dialog, oauth.md 1.8). It runs last of the checks, before the token is signed.
func (s *Server) checkRevoked(ctx context.Context, req *oauth.Client, subj *Subject, claims *txntoken.Claims) error {
	c := s.cfg.Revocations
	if c == nil {
		return nil
	}
	sub := revoke.Subject{Dialog: claims.Dialog(), Txn: claims.Txn, Workloads: []string{req.IDString(), claims.Sub}}
	if in := subj.Input; in != nil {
		sub.Workloads = append(sub.Workloads, in.CallChain()...)
	}
	if err := c.Check(ctx, sub); err != nil {
		return at(stagePolicy, err)
	}
	return nil
}

// revocable wraps the other grant handlers (identity chaining's AS A and AS B) so that
// they too issue nothing in what the operator revoked: the requester, the dialog the
// request names (request_details.dlg), and, for a Txn-Token subject of this TTS, its
// txn, subject and dialog, the requested dialog being linked from it (a grant for a
// linked dialog across a trust boundary).
type revocable struct {
	oauth.Handler
	s *Server
}

func (s *Server) revocableGrants(hs []oauth.Handler) []oauth.Handler {
	if s.cfg.Revocations == nil {
		return hs
	}
	out := make([]oauth.Handler, len(hs))
	for i, h := range hs {
		out[i] = revocable{Handler: h, s: s}
	}
	return out
}

// Handle checks the revocations, then serves the request with the wrapped handler. A
// Txn-Token subject that does not verify here is left to the handler, which refuses it.
func (g revocable) Handle(ctx context.Context, r *http.Request, tr *oauth.TokenRequest, client *oauth.Client, rec *oauth.Record) (oauth.Response, error) {
	c := g.s.cfg.Revocations
	sub := revoke.Subject{Dialog: tr.Dialog(), Workloads: []string{client.IDString()}}
	if tr.SubjectTokenType == TokenTypeTxnToken || tr.SubjectTokenType == TokenTypeTxnToken08 {
		if in, err := g.s.replace.v.Verify(ctx, tr.SubjectToken); err == nil {
			sub.Txn = in.Txn
			sub.Workloads = append(sub.Workloads, in.Sub)
			sub.Workloads = append(sub.Workloads, in.CallChain()...)
			switch d := in.Dialog(); {
			case d != "" && sub.Dialog == "":
				sub.Dialog = d
			case d != "" && d != sub.Dialog:
				sub.LinkedFrom = []string{d}
				if err := c.Check(ctx, revoke.Subject{Dialog: d}); err != nil {
					return nil, at(stagePolicy, err)
				}
			}
		}
	}
	if err := c.Check(ctx, sub); err != nil {
		return nil, at(stagePolicy, err)
	}
	return g.Handler.Handle(ctx, r, tr, client, rec)
}
