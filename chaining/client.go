package chaining

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
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// Client is the requesting workload's side of identity chaining (oauth.md 2.1 steps 2
// and 3): it asks AS A for a JWT authorization grant and redeems it at AS B, each time
// authenticating with its WIT and a fresh proof: a WIMSE HTTP signature (default: it
// also signs the form, so the subject token and the grant are bound to the request) or
// a WPT. It never sends a Txn-Token anywhere but in the subject_token of the grant
// request to AS A. Safe for concurrent use.
type Client struct {
	// HTTPClient carries the requests (default http.DefaultClient). Its transport must
	// not add credentials of its own.
	HTTPClient *http.Client
	// Credentials: a WIT source, or a fixed WIT and the key its cnf names.
	WITSource wit.Source
	WIT       string
	Key       *keys.PrivateKey
	// Proof is tts.ProofHTTPSig (default) or tts.ProofWPT.
	Proof string
	// Now is the clock of the proofs (default time.Now).
	Now func() time.Time
}

// GrantParams is a request to AS A for a grant (oauth.md 2.2).
type GrantParams struct {
	// TokenEndpoint is AS A's token endpoint.
	TokenEndpoint string
	// TxnToken is the subject: a Txn-Token of AS A's domain.
	TxnToken string
	// Audience is AS B's issuer identifier (or another name AS A knows it by);
	// Resource, AS B's URI. At least one.
	Audience string
	Resource string
	// Scope, when set, narrows the grant (space-separated); default: the Txn-Token's
	// scope as far as it may cross.
	Scope string
}

// Grant asks AS A for a JWT authorization grant. A refusal is an *errcode.Error with
// AS A's code and kind.
func (c *Client) Grant(ctx context.Context, p GrantParams) (*GrantResponse, error) {
	if p.TxnToken == "" || p.Audience == "" && p.Resource == "" {
		return nil, errcode.New(errcode.InvalidRequest, "a grant request needs the Txn-Token and the peer AS")
	}
	form := url.Values{
		"grant_type":           {tts.GrantTypeTokenExchange},
		"requested_token_type": {TokenTypeJWT},
		"subject_token":        {p.TxnToken},
		"subject_token_type":   {tts.TokenTypeTxnToken},
	}
	if p.Audience != "" {
		form.Set("audience", p.Audience)
	}
	if p.Resource != "" {
		form.Set("resource", p.Resource)
	}
	if p.Scope != "" {
		form.Set("scope", p.Scope)
	}
	var out GrantResponse
	if err := c.post(ctx, p.TokenEndpoint, form, &out); err != nil {
		return nil, err
	}
	if out.AccessToken == "" || out.IssuedTokenType != TokenTypeJWT || out.TokenType != "N_A" {
		return nil, errcode.New(errcode.UnsupportedTokenType, "AS A did not issue a JWT authorization grant (issued_token_type %q)", truncate(out.IssuedTokenType))
	}
	return &out, nil
}

// Redeem presents grant to AS B (RFC 7523 jwt-bearer) and returns the access token of
// AS B's domain. scope "" asks for all the grant allows there.
func (c *Client) Redeem(ctx context.Context, tokenEndpoint, grant, scope string) (*AccessTokenResponse, error) {
	if grant == "" {
		return nil, errcode.New(errcode.InvalidRequest, "no grant to redeem")
	}
	form := url.Values{"grant_type": {GrantTypeJWTBearer}, "assertion": {grant}}
	if scope != "" {
		form.Set("scope", scope)
	}
	var out AccessTokenResponse
	if err := c.post(ctx, tokenEndpoint, form, &out); err != nil {
		return nil, err
	}
	if out.AccessToken == "" || !strings.EqualFold(out.TokenType, "Bearer") {
		return nil, errcode.New(errcode.UnsupportedTokenType, "AS B did not issue a bearer access token (token_type %q)", truncate(out.TokenType))
	}
	return &out, nil
}

// maxResponseSize bounds what the client reads from an AS.
const maxResponseSize = 64 << 10

func (c *Client) post(ctx context.Context, endpoint string, form url.Values, out any) error {
	if endpoint == "" {
		return errcode.New(errcode.InvalidRequest, "no token endpoint")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "token endpoint URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if err := c.authenticate(ctx, req, endpoint); err != nil {
		return err
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return errcode.Unavailable(errcode.ASUnavailable, err, "token endpoint did not answer")
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponseSize))
	if err != nil {
		return errcode.Unavailable(errcode.ASUnavailable, err, "reading the token response")
	}
	if res.StatusCode != http.StatusOK {
		err := tts.ReadError(res.StatusCode, b)
		if errcode.CodeOf(err) == errcode.Unmapped && res.StatusCode >= 500 {
			return errcode.Unavailable(errcode.ASUnavailable, err, "HTTP %d", res.StatusCode)
		}
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errcode.Wrap(errcode.InvalidEncoding, err, "the token response is not JSON")
	}
	return nil
}

func (c *Client) authenticate(ctx context.Context, req *http.Request, aud string) error {
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
	now := c.Now
	if now == nil {
		now = time.Now
	}
	switch c.Proof {
	case "", tts.ProofHTTPSig:
		_, err := httpsig.NewSigner(key, witRaw, httpsig.WithSignerClock(now)).SignRequest(req, aud)
		return err
	case tts.ProofWPT:
		return wpt.SignRequest(req, key, witRaw, aud, wpt.RequestOptions{}, wpt.WithMintClock(now))
	}
	return errcode.New(errcode.InvalidRequest, "unknown proof method %q (httpsig or wpt)", c.Proof)
}
