package txntoken

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Client asks a TTS token endpoint for Txn-Tokens by token exchange (oauth.md 1.3),
// authenticating with a WIT and a proof of possession made with its key: a WIMSE HTTP
// signature (default), which also covers the form body through Content-Digest, or a
// WPT. It builds the request, has an oauth.TokenClient send it, and checks that what
// came back is a Txn-Token. A configured Client is safe for concurrent use: every
// request gets a fresh proof.
type Client struct {
	// TokenEndpoint is the token endpoint URL (metadata token_endpoint).
	TokenEndpoint string
	// ProofAudience is the recipient the proof names (default TokenEndpoint).
	ProofAudience string
	// HTTPClient carries the requests (default http.DefaultClient, whose
	// http.DefaultTransport keeps only 2 idle connections per host: with more
	// concurrent requests to the TTS each further one dials a new connection; for
	// concurrent use give a client whose transport sets MaxIdleConnsPerHost).
	HTTPClient *http.Client
	// Credentials: a WIT source, or a fixed WIT and the key its cnf names.
	WITSource wit.Source
	WIT       string
	Key       *keys.PrivateKey
	// Proof is proof.HTTPSig (the zero value) or proof.WPT.
	Proof proof.Method
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Request is one Txn-Token request (oauth.md 1.3).
type Request struct {
	// Audience is the trust domain.
	Audience string
	// Scope is the space-separated scope.
	Scope            string
	SubjectToken     string
	SubjectTokenType string
	// Dialog, when set, is sent as request_details.dlg (dialog-binding section 10).
	Dialog string
	// Details and Context are request_details and request_context.
	Details map[string]any
	Context map[string]any
}

// requestDetailsDialog is the request_details member that carries the dialog, which
// the TTS records as tctx.dlg (dialog-binding section 10).
const requestDetailsDialog = "dlg"

// Request sends r and returns the response. A refusal is an *errcode.Error carrying
// the TTS's code (and its kind); a TTS that cannot be reached or answers 5xx without
// a code is tts_unavailable (could not be completed); an answer that is not a
// Txn-Token (issued_token_type txn_token, token_type N_A) is unsupported_token_type.
func (c *Client) Request(ctx context.Context, r Request) (*oauth.TokenResponse, error) {
	if c.TokenEndpoint == "" {
		return nil, errcode.New(errcode.InvalidRequest, "the client has no token endpoint")
	}
	form := url.Values{
		"grant_type":           {oauth.GrantTypeTokenExchange},
		"requested_token_type": {oauth.TokenTypeTxnToken},
		"audience":             {r.Audience},
		"scope":                {r.Scope},
		"subject_token":        {r.SubjectToken},
		"subject_token_type":   {r.SubjectTokenType},
	}
	details := r.Details
	if r.Dialog != "" {
		details = make(map[string]any, len(r.Details)+1)
		for k, v := range r.Details {
			details[k] = v
		}
		details[requestDetailsDialog] = r.Dialog
	}
	for name, obj := range map[string]map[string]any{"request_details": details, "request_context": r.Context} {
		if obj == nil {
			continue
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "%s", name)
		}
		form.Set(name, string(b))
	}
	tr, err := c.oauthClient().Token(ctx, form)
	if err != nil {
		return nil, err
	}
	if tr.AccessToken == "" {
		return nil, errcode.New(errcode.InvalidEncoding, "the token response is not a Txn-Token response")
	}
	if tr.IssuedTokenType != oauth.TokenTypeTxnToken || tr.TokenType != "N_A" {
		return nil, errcode.New(errcode.UnsupportedTokenType, "the TTS issued %q (token_type %q), not a Txn-Token", errcode.Cut(tr.IssuedTokenType), errcode.Cut(tr.TokenType))
	}
	return tr, nil
}

func (c *Client) oauthClient() *oauth.TokenClient {
	return &oauth.TokenClient{
		TokenEndpoint: c.TokenEndpoint,
		ProofAudience: c.ProofAudience,
		HTTPClient:    c.HTTPClient,
		WITSource:     c.WITSource,
		WIT:           c.WIT,
		Key:           c.Key,
		Proof:         c.Proof,
		Now:           c.Now,
		Unavailable:   errcode.TTSUnavailable,
	}
}

// selfSignedTyp is the typ of a self_signed subject token: the drafts define none, and
// "JWT" is what the TTS accepts by default.
const selfSignedTyp = "JWT"

// SelfSignedClaims are the claims of a self_signed subject token (oauth.md 1.4): what
// NewSelfSignedToken writes and the TTS's self_signed handler reads.
type SelfSignedClaims struct {
	Iss   string            `json:"iss"`
	Sub   string            `json:"sub"`
	Aud   jose.Audience     `json:"aud"`
	Iat   *jose.NumericDate `json:"iat"`
	Exp   *jose.NumericDate `json:"exp"`
	Scope *string           `json:"scope,omitempty"`
}

// NewSelfSignedToken mints a self_signed subject token (oauth.md 1.4): signed by the
// workload's key (the one its WIT binds), iss the workload, sub the subject, aud the TTS
// (its issuer identifier), with scope when not empty, valid for lifetime (default 5
// minutes).
func NewSelfSignedToken(key *keys.PrivateKey, workload identifier.ID, sub, tts, scope string, lifetime time.Duration, now time.Time) (string, error) {
	if lifetime <= 0 {
		lifetime = 5 * time.Minute
	}
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(lifetime).Unix())
	c := SelfSignedClaims{Iss: workload.String(), Sub: sub, Aud: jose.Audience{tts}, Iat: &iat, Exp: &exp}
	if scope != "" {
		c.Scope = &scope
	}
	return jose.SignClaims(selfSignedTyp, key, false, c)
}
