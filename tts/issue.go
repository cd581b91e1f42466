package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/condition"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// immutableNames are claims a request_details member may not try to assert: sub and
// txn come from the subject token, aud from the audience parameter, and none of them
// ever changes in a replacement (oauth.md 1.8).
var immutableNames = []string{"sub", "txn", "aud"}

// first builds the claims of a Txn-Token issued on a subject token that is not a
// Txn-Token (oauth.md 1.5 steps 4-10, 1.7).
func (s *Server) first(ctx context.Context, tr *oauth.TokenRequest, req *oauth.Client, rule *Rule, vars *condition.Input, subj *Subject, now time.Time) (*txntoken.Claims, error) {
	subjectScope, known := subj.Scope, subj.ScopeKnown
	if !known && len(rule.SubjectScopes) > 0 && (subj.TokenType == TokenTypeSelfSigned || subj.TokenType == TokenTypeUnsignedJSON) {
		// The requester vouches for the subject; policy says what such a subject may do.
		subjectScope, known = rule.SubjectScopes, true
	}
	if !known {
		return nil, at(stageScope, errcode.New(errcode.ScopeUnknown, "the scope of the subject token cannot be determined, so no scope can be granted (TT section 13.14)"))
	}
	scope, computed, err := ruleGrant(tr.Scope, subjectScope, rule, "the subject token's", vars)
	if err != nil {
		return nil, err
	}
	for _, name := range immutableNames {
		if _, ok := tr.RequestDetails[name]; ok {
			return nil, at(stageRequest, errcode.New(errcode.InvalidRequest, "request_details may not set %s: it comes from the subject token and the audience", name))
		}
	}
	var tctx map[string]any
	d := tr.Dialog()
	for name, v := range tr.RequestDetails {
		if name == txntoken.DialogMember && d != "" {
			continue // written below, as the string it decoded to
		}
		if name == txntoken.DialogMember || rule.mayDetail(name) {
			if tctx == nil {
				tctx = make(map[string]any, len(tr.RequestDetails))
			}
			tctx[name] = v
		}
	}
	if d != "" {
		if tctx == nil {
			tctx = make(map[string]any, len(tr.RequestDetails))
		}
		tctx[txntoken.DialogMember] = d
	}
	// What the rule computes wins over what the requester sent under the same name.
	for name, v := range computed {
		if tctx == nil {
			tctx = make(map[string]any, len(computed))
		}
		tctx[name] = v
	}
	var rctx map[string]any
	for name, v := range tr.RequestContext {
		if rule.mayContext(name) {
			if rctx == nil {
				rctx = map[string]any{}
			}
			rctx[name] = v
		}
	}
	if err := notEmbedded(tr.SubjectToken, tr.RequestDetails, tr.RequestContext); err != nil {
		return nil, err
	}
	exp := now.Add(s.cfg.Policy.Lifetime)
	if !s.cfg.Policy.BeyondSubjectExpiry && !subj.Expiry.IsZero() && subj.Expiry.Before(exp) {
		// oauth.md 1.5 step 10: outliving the subject token needs a policy that says so.
		exp = subj.Expiry
	}
	iat, e := jose.NumericDate(now.Unix()), jose.NumericDate(exp.Unix())
	if e <= iat {
		return nil, at(stageSubject, errcode.New(errcode.Expired, "the subject token expires within the second"))
	}
	// The claims, their two dates and their one audience in one allocation.
	n := &struct {
		c        txntoken.Claims
		iat, exp jose.NumericDate
		aud      [1]string
	}{iat: iat, exp: e, aud: [1]string{tr.Audience}}
	n.c = txntoken.Claims{
		Iss: s.cfg.Issuer, Iat: &n.iat, Exp: &n.exp, Aud: n.aud[:], Txn: newTxn(),
		Sub: subj.Sub, Scope: strings.Join(scope, " "), ReqWL: req.IDString(), Tctx: tctx, Rctx: rctx,
	}
	return &n.c, nil
}

// replacement builds a replacement Txn-Token (oauth.md 1.8), row by row:
//   - txn, sub and aud are copied and never change; an audience other than the input's
//     is refused;
//   - the scope only narrows;
//   - tctx and rctx members of the input are kept; a request may add members policy
//     allows, never change one (dlg included: dialog_mismatch);
//   - the Call Chain of requesters is kept (req_chain) and the new requester appended;
//   - the input has not expired (checked by the handler); a longer lifetime is allowed
//     only while the count of lifetime-extending replacements is under the cap.
func (s *Server) replacement(ctx context.Context, tr *oauth.TokenRequest, req *oauth.Client, rule *Rule, vars *condition.Input, subj *Subject, now time.Time) (*txntoken.Claims, error) {
	in := subj.Input
	if tr.Audience != in.Aud[0] {
		return nil, at(stageSubject, errcode.New(errcode.ImmutableClaimChanged, "a replacement keeps the trust domain %q of its input (aud never changes)", in.Aud[0]))
	}
	scope, computed, err := ruleGrant(tr.Scope, in.ScopeList(), rule, "the input Txn-Token's", vars)
	if err != nil {
		return nil, err
	}
	if err := notEmbedded(tr.SubjectToken, tr.RequestDetails, tr.RequestContext); err != nil {
		return nil, err
	}
	for _, name := range immutableNames {
		v, ok := tr.RequestDetails[name]
		if !ok {
			continue
		}
		current := map[string]string{"sub": in.Sub, "txn": in.Txn, "aud": in.Aud[0]}[name]
		if str, err := netjson.DecodeString(v); err != nil || str != current {
			return nil, at(stageSubject, errcode.New(errcode.ImmutableClaimChanged, "a replacement never changes %s", name))
		}
	}
	tctx := cloneJSONObject(in.Tctx)
	for name, v := range tr.RequestDetails {
		if slices.Contains(immutableNames, name) {
			continue
		}
		old, present := tctx[name]
		switch {
		case present && !jsonEqual(old, v):
			if name == txntoken.DialogMember {
				return nil, at(stageSubject, errcode.New(errcode.DialogMismatch, "a replacement never changes tctx.dlg"))
			}
			return nil, at(stageSubject, errcode.New(errcode.ImmutableClaimChanged, "a replacement never changes tctx.%s", errcode.Cut(name)))
		case present:
		case name == txntoken.DialogMember || rule.mayDetail(name):
			if tctx == nil {
				tctx = map[string]any{}
			}
			tctx[name] = v
		}
	}
	// A computed member joins like a request_details member: never changing one the
	// input has.
	for name, v := range computed {
		old, present := tctx[name]
		switch {
		case present && !jsonEqual(old, v):
			return nil, at(stageSubject, errcode.New(errcode.ImmutableClaimChanged, "a replacement never changes tctx.%s (computed by policy rule %q)", errcode.Cut(name), rule.Name))
		case present:
		default:
			if tctx == nil {
				tctx = map[string]any{}
			}
			tctx[name] = v
		}
	}
	rctx := cloneJSONObject(in.Rctx)
	for name, v := range tr.RequestContext {
		old, present := rctx[name]
		switch {
		case present && !jsonEqual(old, v):
			return nil, at(stageSubject, errcode.New(errcode.ImmutableClaimChanged, "a replacement never changes rctx.%s", errcode.Cut(name)))
		case present:
		case rule.mayContext(name):
			if rctx == nil {
				rctx = map[string]any{}
			}
			rctx[name] = v
		}
	}
	chain := append(in.CallChain(), req.IDString())
	if len(chain) > s.cfg.Policy.MaxCallChain {
		return nil, at(stageSubject, errcode.New(errcode.ReplacementLimitReached, "the call chain already has %d requesters, limit %d", len(chain)-1, s.cfg.Policy.MaxCallChain))
	}
	exp, ext := now.Add(s.cfg.Policy.Lifetime), in.Ext
	inExp := in.Exp.Time()
	// Compared in whole seconds, as the claims carry them: a token that ends in the
	// same second as its input does not extend it.
	if exp.Unix() > inExp.Unix() {
		if in.Ext >= s.cfg.Policy.MaxLifetimeExtensions {
			exp = inExp // the cap is reached: the replacement may narrow, not extend
		} else {
			ext++
		}
	}
	iat, e := jose.NumericDate(now.Unix()), jose.NumericDate(exp.Unix())
	if e <= iat {
		return nil, at(stageSubject, errcode.New(errcode.Expired, "the input Txn-Token expires within the second"))
	}
	out := &txntoken.Claims{
		Iss: s.cfg.Issuer, Iat: &iat, Exp: &e, Aud: in.Aud, Txn: in.Txn, Sub: in.Sub,
		Scope: strings.Join(scope, " "), ReqWL: req.ID.String(), ReqChain: chain, Ext: ext, Tctx: tctx, Rctx: rctx,
	}
	if err := checkReplacement(in, out, s.cfg.Policy.MaxLifetimeExtensions); err != nil {
		return nil, err
	}
	return out, nil
}

// checkReplacement re-checks the rows of oauth.md 1.8 on the finished claims, so that a
// future change to the building code cannot break one silently.
func checkReplacement(in, out *txntoken.Claims, maxExt int) error {
	fail := func(format string, args ...any) error {
		return at(stageSubject, errcode.New(errcode.ImmutableClaimChanged, format, args...))
	}
	switch {
	case out.Txn != in.Txn:
		return fail("txn changed")
	case out.Sub != in.Sub:
		return fail("sub changed")
	case len(out.Aud) != 1 || len(in.Aud) != 1 || out.Aud[0] != in.Aud[0]:
		return fail("aud changed")
	case out.Dialog() != in.Dialog() && in.Dialog() != "":
		return at(stageSubject, errcode.New(errcode.DialogMismatch, "tctx.dlg changed"))
	}
	for name, v := range in.Tctx {
		if !jsonEqual(out.Tctx[name], v) {
			return fail("tctx.%s changed", errcode.Cut(name))
		}
	}
	for name, v := range in.Rctx {
		if !jsonEqual(out.Rctx[name], v) {
			return fail("rctx.%s changed", errcode.Cut(name))
		}
	}
	for _, sc := range out.ScopeList() {
		if !slices.Contains(in.ScopeList(), sc) {
			return at(stageScope, errcode.New(errcode.ScopeTooBroad, "scope %q widened", sc))
		}
	}
	inChain, outChain := in.CallChain(), out.CallChain()
	if len(outChain) < len(inChain) || !slices.Equal(outChain[:len(inChain)], inChain) {
		return fail("the call chain lost a requester")
	}
	if out.Exp.Time().After(in.Exp.Time()) && (out.Ext != in.Ext+1 || out.Ext > maxExt) {
		return at(stageSubject, errcode.New(errcode.ReplacementLimitReached, "lifetime extended beyond the cap"))
	}
	return nil
}

// grantScope: every requested scope token must be tied to the subject (oauth.md 1.5
// step 4) and, when the rule lists scopes, be one of them. The grant is the request,
// never more; nothing is silently dropped, so a client never holds a token narrower
// than it thinks.
func grantScope(requested, allowed []string, rule *Rule, whose string) ([]string, error) {
	for _, sc := range requested {
		if !slices.Contains(allowed, sc) {
			return nil, at(stageScope, errcode.New(errcode.ScopeTooBroad, "scope %q is not within %s scope", errcode.Cut(sc), whose))
		}
		if len(rule.Scopes) > 0 && !slices.Contains(rule.Scopes, sc) {
			return nil, at(stageScope, errcode.New(errcode.ScopeTooBroad, "policy does not let this workload request scope %q", errcode.Cut(sc)))
		}
	}
	return requested, nil
}

// ruleGrant is what rule grants of the requested scope, for a first Txn-Token and a
// replacement alike: grantScope, narrowed by the rule's conditions, and the tctx members
// they compute from vars.
func ruleGrant(requested, allowed []string, rule *Rule, whose string, vars *condition.Input) ([]string, map[string]json.RawMessage, error) {
	scope, err := grantScope(requested, allowed, rule, whose)
	if err != nil {
		return nil, nil, err
	}
	if scope, err = rule.conds.Narrow(rule.Name, vars, scope); err != nil {
		return nil, nil, at(stageScope, err)
	}
	computed, err := rule.conds.Members(rule.Name, vars)
	if err != nil {
		return nil, nil, at(stagePolicy, err)
	}
	return scope, computed, nil
}

// notEmbedded refuses context that carries the subject token itself (oauth.md 1.5 step
// 9: the inbound access token is never embedded). It looks at the JSON text as sent.
func notEmbedded(subjectToken string, objs ...map[string]json.RawMessage) error {
	if len(subjectToken) < 16 {
		return nil
	}
	for _, o := range objs {
		for _, v := range o {
			if bytes.Contains(v, stringBytes(subjectToken)) {
				return at(stageRequest, errcode.New(errcode.InvalidRequest, "request context or details carry the subject token, which is never embedded in a Txn-Token"))
			}
		}
	}
	return nil
}

// jsonEqual compares two JSON values, each either decoded or raw JSON text, after
// bringing both to one form (decoded with json.Number, then encoded).
func jsonEqual(a, b any) bool {
	x, err1 := canonicalJSON(a)
	y, err2 := canonicalJSON(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func canonicalJSON(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		var d any
		if err := netjson.DecodeKeepingNumbers(raw, &d); err != nil {
			return nil, err
		}
		v = d
	}
	return json.Marshal(v)
}

// signClaims signs a Txn-Token: typ txntoken+jwt, the key's one alg, kid for rotation
// (oauth.md 1.7), claims in Claims' field order.
func signClaims(key *keys.PrivateKey, c *txntoken.Claims) (string, error) {
	// Claims.MarshalJSON's document directly (through json.Marshal it would be
	// validated and compacted once more), written into a buffer on the stack: Sign
	// only reads it.
	var buf [1024]byte
	payload, err := c.AppendJSON(buf[:0])
	if err != nil {
		return "", err
	}
	return jose.Sign(txntoken.Type, key, true, payload)
}
