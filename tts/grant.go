package tts

import (
	"context"
	"log/slog"
	"net/http"
	"slices"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// HandlerName is the name of the TTS's grant handler at the token endpoint (token
// exchange for a Txn-Token, oauth.md 1.3): oauth.Record.Handler.
const HandlerName = oauth.HandlerTxnToken

// txnGrant is the TTS's grant handler at the token endpoint, and its fallback: it
// answers every request no other handler serves (unsupported_grant_type,
// unsupported_token_type, a repeated parameter).
type txnGrant struct{ s *Server }

// Name implements oauth.Handler.
func (txnGrant) Name() string { return HandlerName }

// Match implements oauth.Handler: a token exchange asking for a Txn-Token.
func (txnGrant) Match(tr *oauth.TokenRequest) bool {
	return tr.GrantType == GrantTypeTokenExchange && (tr.RequestedTokenType == TokenTypeTxnToken || tr.RequestedTokenType == TokenTypeTxnToken08)
}

// Check implements oauth.Handler: step 1 of Handle, before the client is
// authenticated (step 2, the endpoint's, as ClientAuth says).
func (txnGrant) Check(tr *oauth.TokenRequest, rec *oauth.Record) error {
	if err := checkTxnRequest(tr); err != nil {
		return at(stageRequest, err)
	}
	rec.Grant, rec.SubjectTokenType = metricGrant(tr.GrantType, tr.SubjectTokenType), tr.SubjectTokenType
	if err := checkRequired(tr); err != nil {
		return at(stageRequest, err)
	}
	return nil
}

// ClientAuth implements oauth.Handler: the configured methods (oauth.md 1.9), a
// Txn-Token offered as a credential named as such (item 4).
func (g txnGrant) ClientAuth() *oauth.ClientAuth { return &g.s.auth }

// txnTokenRefused names a Txn-Token offered as a credential (oauth.md 1.9 item 4). It
// can never pass an authenticator (each requires its own typ), so the endpoint asks
// only when authentication did not succeed, and it costs nothing on the path that
// issues.
func txnTokenRefused(r *http.Request, tr *oauth.TokenRequest, present bool) error {
	if !presentedTxnToken(r, tr, present) {
		return nil
	}
	return errcode.New(errcode.TxnTokenNotCredential, "a Txn-Token never authenticates a workload; authenticate with a WIT and a proof, mTLS or private_key_jwt")
}

// Handle implements oauth.Handler. With the endpoint it runs one token request through
// its steps, in an order chosen so that cheap, stateless checks come before any
// signature verification, and the replay store is touched only by an authenticator
// whose signature verified:
//
//  1. form, sizes (the endpoint), the parameters a TTS refuses, request_context and
//     request_details, REQUIRED parameters, grant and requested token types (oauth.md
//     1.3): Check;
//  2. no Txn-Token as a credential; client authentication (1.9): the endpoint, as
//     ClientAuth says;
//  3. policy: the workload, the audience (1.5 step 1, 1.11 invalid_target);
//  4. the subject token type and the subject token (1.4, 1.5 steps 2-3);
//  5. scope, context, lifetime; replacement rules (1.5 steps 4-10, 1.8);
//  6. claims and signature (1.7).
func (g txnGrant) Handle(ctx context.Context, r *http.Request, tr *oauth.TokenRequest, req *oauth.Client, rec *oauth.Record) (oauth.Response, error) {
	s := g.s
	pol := &s.cfg.Policy
	pattern, err := pol.governing(rec.Requester)
	if err != nil {
		return nil, at(stagePolicy, err)
	}
	if !slices.Contains(s.cfg.TrustDomains, tr.Audience) {
		return nil, at(stageRequest, errcode.New(errcode.AudienceNotServed, "audience %q is not a trust domain this TTS serves", errcode.Cut(tr.Audience)))
	}
	if !pol.anyRule(pattern, func(r *Rule) bool { return r.mayAudience(tr.Audience, req.ID) }) {
		return nil, at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s may not request Txn-Tokens for %s", req.ID, tr.Audience))
	}

	var h SubjectTokenHandler
	switch tr.SubjectTokenType {
	case TokenTypeRefreshToken:
		return nil, at(stageSubject, errcode.New(errcode.UnsupportedTokenType, "a refresh token is never a subject token (TT section 13.3)"))
	case TokenTypeTxnToken:
		h = s.replace
	default:
		h = s.handlers[tr.SubjectTokenType]
	}
	if h == nil {
		return nil, at(stageSubject, errcode.New(errcode.UnsupportedTokenType, "subject_token_type %q is not accepted", errcode.Cut(tr.SubjectTokenType)))
	}
	if !pol.anyRule(pattern, func(r *Rule) bool { return r.mayAudience(tr.Audience, req.ID) && r.mayType(tr.SubjectTokenType) }) {
		return nil, at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s may not present %s subject tokens", req.ID, tr.SubjectTokenType))
	}
	subj, err := h.Validate(ctx, tr.SubjectToken, req)
	if err != nil {
		return nil, at(stageSubject, err)
	}
	rec.SubjectSHA256 = subj.hash
	// The rule that decides: with conditions, only now that the subject is known.
	rule, in, err := pol.decide(ctx, pattern, tr, req, subj)
	defer in.Close()
	if rule != nil {
		rec.Rule = rule.Name
	}
	if err != nil {
		return nil, at(stagePolicy, err)
	}

	now := s.cfg.Now()
	var claims *txntoken.Claims
	if subj.Input != nil {
		claims, err = s.replacement(ctx, tr, req, rule, in, subj, now)
	} else {
		claims, err = s.first(ctx, tr, req, rule, in, subj, now)
	}
	if err != nil {
		return nil, err
	}
	if err := s.decide(ctx, req, subj, claims, rec.RequestID); err != nil {
		return nil, err
	}
	if err := s.checkRevoked(ctx, req, subj, claims); err != nil {
		return nil, err
	}
	// One key for the whole issuance, so the log names the key that really signed
	// even if a rotation activates another meanwhile.
	key := s.cfg.Keys.Active()
	tok, err := signClaims(key, claims)
	if err != nil {
		return nil, at(stageIssue, errcode.Wrap(errcode.Internal, err, "signing"))
	}
	rec.Detail, rec.KID = claims, key.KID()
	rec.Token = oauth.TokenResponse{
		AccessToken: tok, IssuedTokenType: TokenTypeTxnToken, TokenType: "N_A",
		ExpiresIn: int64(*claims.Exp) - now.Unix(), Scope: claims.Scope,
	}
	return &rec.Token, nil
}

// subjectHash is the subject token's hash for the log line ("" without one): the
// subject handler's when it knew it (a cached token), else computed for the line.
func subjectHash(rec *oauth.Record) string {
	if rec.SubjectSHA256 == "" && rec.Request != nil && rec.Request.SubjectToken != "" && rec.Grant != "" {
		rec.SubjectSHA256 = tokenhash.Of(rec.Request.SubjectToken)
	}
	return rec.SubjectSHA256
}

// Done implements oauth.Handler: the request's log line; tokens only by hash. (The
// endpoint's Observer counts it.)
func (g txnGrant) Done(ctx context.Context, r *http.Request, rec *oauth.Record) {
	s := g.s
	grant := rec.Grant
	if grant == "" {
		grant = metricGrant("", "")
	}
	var dialog string
	if rec.Request != nil && rec.Grant != "" {
		dialog = rec.Request.Dialog()
	}
	if rec.Err != nil {
		s.log.Log(ctx, errcode.LogLevel(rec.Err), "txn token refused", "request_id", rec.RequestID, "dlg", dialog, "error", rec.Error, "code", string(rec.Code),
			"kind", errcode.KindOf(rec.Err).String(), "rule", rec.Rule, "grant", grant, "subject_token_type", rec.SubjectTokenType,
			"subject_token_sha256", subjectHash(rec), "method", rec.Method, "requester", rec.Requester,
			"remote", r.RemoteAddr, "detail", rec.Err.Error())
		return
	}
	claims := rec.Detail.(*txntoken.Claims)
	// This line is written for every token issued: typed attributes, and the hashes
	// computed only when the line is.
	if level := s.cfg.IssuedLogLevel; s.log.Enabled(ctx, level) {
		s.log.LogAttrs(ctx, level, "txn token issued", slog.String("request_id", rec.RequestID), slog.String("dlg", claims.Dialog()),
			slog.String("rule", rec.Rule), slog.String("grant", grant), slog.String("subject_token_type", rec.SubjectTokenType),
			slog.String("subject_token_sha256", subjectHash(rec)), slog.String("method", rec.Method), slog.String("requester", rec.Requester),
			slog.String("aud", claims.Aud[0]), slog.String("txn", claims.Txn), slog.String("txn_token_sha256", tokenhash.Of(rec.Token.AccessToken)),
			slog.String("kid", rec.KID), slog.Int64("exp", int64(*claims.Exp)), slog.Int("call_chain", max(1, len(claims.ReqChain))),
			slog.String("remote", r.RemoteAddr))
	}
}
