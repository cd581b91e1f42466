package tts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
)

// Policy is the TTS's local, selective issuance policy (oauth.md 1.5 steps 1 and 8; TT
// section 13.10): which workloads may ask, for which trust domains, with which subject
// token types, for which scopes, and which context they may put into the token.
type Policy struct {
	// Rules: a workload is governed by the rule naming it exactly, else by the rule
	// with the longest matching prefix. A workload no rule names is refused
	// (unauthorized_client).
	Rules []Rule
	// Lifetime of an issued Txn-Token (default 5 minutes; oauth.md 1.8: minutes or less).
	Lifetime time.Duration
	// BeyondSubjectExpiry lets a token outlive its subject token (oauth.md 1.5 step 10,
	// 1.8: MAY, by policy). Off by default: exp is capped at the subject token's exp.
	BeyondSubjectExpiry bool
	// MaxLifetimeExtensions caps the replacements in a token's history that extend its
	// lifetime (oauth.md 1.8, SHOULD). Once reached, a replacement keeps the input's
	// exp. Default 3; a negative value allows none.
	MaxLifetimeExtensions int
	// MaxCallChain caps the number of requesters a replaced token records (default 16).
	MaxCallChain int
}

// Rule is what one workload, or the workloads under a prefix, may ask for.
type Rule struct {
	// Name names the rule in the decision log (default: Workload).
	Name string
	// Workload is an identifier, or a prefix ending in "/" (scheme://trust-domain/...).
	Workload string
	// Audiences are the trust domains it may request tokens for (default: its own).
	Audiences []string
	// SubjectTokenTypes it may present (default DefaultSubjectTokenTypes; unsigned_json
	// must always be listed explicitly: oauth.md 1.4).
	SubjectTokenTypes []string
	// Scopes, when set, are the only scope tokens it may request.
	Scopes []string
	// SubjectScopes is the scope tied to a self_signed or unsigned_json subject token
	// that names none. Without it such a request is refused (oauth.md 1.5 step 4).
	SubjectScopes []string
	// Details are the request_details members, besides dlg, that may enter tctx ("*":
	// any). dlg always enters (dialog-binding section 10).
	Details []string
	// Context are the request_context members it may supply into rctx ("*": any). For
	// example only the edge gateway should supply req_ip (oauth.md 1.5 step 8).
	Context []string
	// When, GrantScopes and Tctx are CEL (policy_cel.go, docs/tts.md "Conditions"):
	// the rule applies only where When holds, grants only the requested scopes
	// GrantScopes lists, and puts the computed Tctx members into tctx.
	When, GrantScopes Expr
	Tctx              map[string]Expr

	conds *grantpolicy.Conditions
}

// DefaultSubjectTokenTypes are the types a rule allows when it lists none.
var DefaultSubjectTokenTypes = []string{TokenTypeAccessToken, TokenTypeIDToken, TokenTypeJWT, TokenTypeSelfSigned, TokenTypeTxnToken}

// Policy defaults.
const (
	DefaultLifetime              = 5 * time.Minute
	DefaultMaxLifetimeExtensions = 3
	DefaultMaxCallChain          = 16
	// MaxLifetime bounds Policy.Lifetime: a Txn-Token is a replayable bearer token.
	MaxLifetime = time.Hour
)

func (p *Policy) normalize() error {
	if p.Lifetime <= 0 {
		p.Lifetime = DefaultLifetime
	}
	if p.Lifetime > MaxLifetime {
		return fmt.Errorf("tts: token lifetime %s is over the limit %s", p.Lifetime, MaxLifetime)
	}
	if p.MaxLifetimeExtensions == 0 {
		p.MaxLifetimeExtensions = DefaultMaxLifetimeExtensions
	}
	if p.MaxLifetimeExtensions < 0 {
		p.MaxLifetimeExtensions = 0
	}
	if p.MaxCallChain <= 0 {
		p.MaxCallChain = DefaultMaxCallChain
	}
	if err := p.compile(); err != nil {
		return err
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if strings.HasSuffix(r.Workload, "/") {
			if err := checkPrefix(r.Workload); err != nil {
				return err
			}
		} else if _, err := identifier.Parse(r.Workload); err != nil {
			return fmt.Errorf("tts: policy rule %q: %w", r.Workload, err)
		}
		if len(r.SubjectTokenTypes) == 0 {
			r.SubjectTokenTypes = slices.Clone(DefaultSubjectTokenTypes)
		}
		for _, t := range r.SubjectTokenTypes {
			if t == TokenTypeRefreshToken {
				return fmt.Errorf("tts: policy rule %q allows refresh tokens, which are never accepted", r.Workload)
			}
		}
		for _, s := range append(slices.Clone(r.Scopes), r.SubjectScopes...) {
			if _, err := oauth.ParseScope(s); err != nil || strings.Contains(s, " ") {
				return fmt.Errorf("tts: policy rule %q: %q is not one scope token", r.Workload, s)
			}
		}
	}
	return nil
}

// checkPrefix: a prefix must name a whole trust domain and path segments, so that
// wimse://a.example/x/ cannot match wimse://a.example/xy.
func checkPrefix(pre string) error {
	if _, err := identifier.Parse(strings.TrimSuffix(pre, "/") + "/x"); err != nil {
		return fmt.Errorf("tts: policy prefix %q is not scheme://trust-domain/[path/]: %w", pre, err)
	}
	return nil
}

// governing returns the workload pattern of the rules governing the workload whose
// identifier (ID.String()) is s: its own identifier if a rule names it, else the
// longest matching prefix.
func (p *Policy) governing(s string) (string, error) {
	best := ""
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Workload == s {
			return s, nil
		}
		if strings.HasSuffix(r.Workload, "/") && strings.HasPrefix(s, r.Workload) && len(r.Workload) > len(best) {
			best = r.Workload
		}
	}
	if best == "" {
		return "", errcode.New(errcode.WorkloadNotAllowed, "no policy rule lets %s request Txn-Tokens", s)
	}
	return best, nil
}

func (r *Rule) mayAudience(td string, id identifier.ID) bool {
	if len(r.Audiences) == 0 {
		return id.TrustDomain() == td
	}
	return slices.Contains(r.Audiences, td)
}

func (r *Rule) mayType(t string) bool { return slices.Contains(r.SubjectTokenTypes, t) }

func (r *Rule) mayDetail(name string) bool {
	return slices.Contains(r.Details, "*") || slices.Contains(r.Details, name)
}

func (r *Rule) mayContext(name string) bool {
	return slices.Contains(r.Context, "*") || slices.Contains(r.Context, name)
}
