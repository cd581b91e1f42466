package tts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// Proof methods of a Client.
const (
	ProofWPT     = "wpt"
	ProofHTTPSig = "httpsig"
)

// Client asks a TTS token endpoint for Txn-Tokens, authenticating with a WIT and a
// proof of possession made with its key: a WPT (default) or a WIMSE HTTP signature,
// which also covers the form body through Content-Digest. A configured Client is safe
// for concurrent use: every request gets a fresh proof.
type Client struct {
	// TokenEndpoint is the token endpoint URL (metadata token_endpoint).
	TokenEndpoint string
	// ProofAudience is the recipient the proof names (default TokenEndpoint).
	ProofAudience string
	// HTTPClient carries the requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Credentials: a WIT source, or a fixed WIT and the key its cnf names.
	WITSource wit.Source
	WIT       string
	Key       *keys.PrivateKey
	// Proof is ProofWPT (default) or ProofHTTPSig.
	Proof string
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

// maxResponseSize bounds what the client reads from a TTS.
const maxResponseSize = 64 << 10

// Request sends r and returns the response. A refusal is an *errcode.Error carrying
// the TTS's code (and its kind).
func (c *Client) Request(ctx context.Context, r Request) (*TokenResponse, error) {
	if c.TokenEndpoint == "" {
		return nil, errcode.New(errcode.InvalidRequest, "the client has no token endpoint")
	}
	form := url.Values{
		"grant_type":           {GrantTypeTokenExchange},
		"requested_token_type": {TokenTypeTxnToken},
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
		details[DialogMember] = r.Dialog
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
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.TokenEndpoint, strings.NewReader(body))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "token endpoint URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if err := c.authenticate(ctx, req); err != nil {
		return nil, err
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, errcode.Unavailable(errcode.TTSUnavailable, err, "token endpoint did not answer")
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponseSize))
	if err != nil {
		return nil, errcode.Unavailable(errcode.TTSUnavailable, err, "reading the token response")
	}
	if res.StatusCode != http.StatusOK {
		return nil, ReadError(res.StatusCode, b)
	}
	var tr TokenResponse
	if err := json.Unmarshal(b, &tr); err != nil || tr.AccessToken == "" {
		return nil, errcode.New(errcode.InvalidEncoding, "the token response is not a Txn-Token response")
	}
	if tr.IssuedTokenType != TokenTypeTxnToken || tr.TokenType != "N_A" {
		return nil, errcode.New(errcode.UnsupportedTokenType, "the TTS issued %q (token_type %q), not a Txn-Token", truncate(tr.IssuedTokenType), truncate(tr.TokenType))
	}
	return &tr, nil
}

func (c *Client) authenticate(ctx context.Context, req *http.Request) error {
	witRaw, key := c.WIT, c.Key
	if c.WITSource != nil {
		cred, err := c.WITSource.Credential(ctx)
		if err != nil {
			return err
		}
		witRaw, key = cred.WIT, cred.Key
	}
	if witRaw == "" || key == nil {
		return errcode.New(errcode.MissingCredential, "the client has no WIT and key")
	}
	aud := c.ProofAudience
	if aud == "" {
		aud = c.TokenEndpoint
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	switch c.Proof {
	case "", ProofWPT:
		return wpt.SignRequest(req, key, witRaw, aud, wpt.RequestOptions{}, wpt.WithMintClock(now))
	case ProofHTTPSig:
		_, err := httpsig.NewSigner(key, witRaw, httpsig.WithSignerClock(now)).SignRequest(req, aud)
		return err
	}
	return errcode.New(errcode.InvalidRequest, "unknown proof method %q (wpt or httpsig)", c.Proof)
}

// NewSelfSignedToken mints a self_signed subject token (oauth.md 1.4): signed by the
// workload's key (the one its WIT binds), iss the workload, sub the subject, aud the TTS
// (its issuer identifier), with scope when not empty, valid for lifetime.
func NewSelfSignedToken(key *keys.PrivateKey, workload identifier.ID, sub, tts, scope string, lifetime time.Duration, now time.Time) (string, error) {
	if lifetime <= 0 {
		lifetime = 5 * time.Minute
	}
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(lifetime).Unix())
	c := SelfSignedClaims{Iss: workload.String(), Sub: sub, Aud: jose.Audience{tts}, Iat: &iat, Exp: &exp}
	if scope != "" {
		c.Scope = &scope
	}
	return jose.SignClaims(DefaultSelfSignedTyp, key, false, c)
}
