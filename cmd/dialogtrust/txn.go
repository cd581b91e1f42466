package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	dialogctx "github.com/dialogtrust/dialogtrust/dialog"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// txnRequest: dialogtrust txn request. It discovers the TTS at --tts (RFC 8414
// metadata), authenticates with the WIT and a proof made with --key (a WPT, or an HTTP
// signature with --proof httpsig), and prints the Txn-Token.
func txnRequest(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("txn request", stderr)
	ttsURL := fs.String("tts", "", "the TTS's base URL (its issuer identifier)")
	w := addWorkloadFlags(fs, proof.WPT)
	subject := fs.String("subject-token", "", "the subject token (value, @file or -)")
	subjectType := fs.String("subject-token-type", "", "its type: a URN, or access_token, id_token, jwt, self_signed, unsigned_json, txn_token")
	selfSigned := fs.String("self-signed", "", "instead of --subject-token: mint a self_signed subject token for this sub with --key")
	scope := fs.String("scope", "", "space-separated scope")
	audience := fs.String("audience", "", "the trust domain")
	dialog := fs.String("dialog", "", "the dialog identifier (request_details.dlg)")
	details := fs.String("details", "", "request_details, a JSON object")
	ctxJSON := fs.String("context", "", "request_context, a JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"tts": *ttsURL, "wit": *w.wit, "key": *w.key, "scope": *scope, "audience": *audience}); err != nil {
		return err
	}
	if (*subject == "") == (*selfSigned == "") {
		return usageError{"give exactly one of --subject-token and --self-signed"}
	}
	if err := baseURL("tts", *ttsURL); err != nil {
		return err
	}
	cred, err := w.read(fs, stdin)
	if err != nil {
		return err
	}
	r := txntoken.Request{Audience: *audience, Scope: *scope, Dialog: *dialog}
	for name, dst := range map[string]*map[string]any{"details": &r.Details, "context": &r.Context} {
		src := map[string]string{"details": *details, "context": *ctxJSON}[name]
		if src == "" {
			continue
		}
		if err := json.Unmarshal([]byte(src), dst); err != nil || *dst == nil {
			return usageError{"--" + name + " must be a JSON object"}
		}
	}
	ctx, cancel, hc := w.exchange()
	defer cancel()
	md, err := ttsMetadata(ctx, hc, *ttsURL)
	if err != nil {
		return err
	}
	if *selfSigned != "" {
		wl, err := witSubject(cred.wit)
		if err != nil {
			return err
		}
		if r.SubjectToken, err = txntoken.NewSelfSignedToken(cred.key, wl, *selfSigned, md.Issuer, *scope, 5*time.Minute, time.Now()); err != nil {
			return err
		}
		r.SubjectTokenType = tts.TokenTypeSelfSigned
	} else {
		if r.SubjectToken, err = readValue(*subject, stdin); err != nil {
			return err
		}
		if *subjectType == "" {
			return usageError{"--subject-token-type is required with --subject-token"}
		}
		r.SubjectTokenType = tokenTypeURN(*subjectType)
	}
	c := &txntoken.Client{TokenEndpoint: md.TokenEndpoint, HTTPClient: hc, WIT: cred.wit, Key: cred.key, Proof: cred.proof}
	resp, err := c.Request(ctx, r)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, resp.AccessToken+"\n")
	return err
}

// txnVerify: dialogtrust txn verify. It validates a Txn-Token as a receiver in trust
// domain --audience does (oauth.md 1.10) and prints its verdict and claims (verdict.go);
// with --dialog it also checks tctx.dlg (dialog-binding section 12 step 3).
func txnVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("txn verify", stderr)
	jwks := fs.String("jwks", "", "the TTS's JWKS: an http(s) URL or a file")
	audience := fs.String("audience", "", "this receiver's trust domain")
	dialog := fs.String("dialog", "", "require tctx.dlg to be this dialog")
	dialogContext := fs.String("dialog-context", "", "require tctx.dlg to be the dlg of this Dialog-Context value")
	iss := fs.String("iss", "", "require this iss")
	now := fs.Int64("now", 0, "verify at this Unix time instead of the clock")
	skew := fs.Duration("skew", oauth.DefaultSkew, "allowed clock skew")
	asJSON := fs.Bool("json", false, "print one JSON object: the verdict (what was verified, the keys, the dialog, the audience, the expiry) and the claims, or the refusal's code and kind")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"jwks": *jwks, "audience": *audience}); err != nil {
		return err
	}
	tok, err := tokenArg(fs, stdin)
	if err != nil {
		return err
	}
	vd := verdict{Token: "Txn-Token", Audience: *audience}
	vd.Keys.JWKS = *jwks
	claims, err := verifyTxn(tok, *jwks, *audience, *dialog, *dialogContext, *iss, *now, *skew)
	if err != nil {
		return vd.refuse(stdout, *asJSON, err)
	}
	// The token verified: its header's kid is the key that signed it.
	if t, err := jose.Parse(tok, len(tok)); err == nil {
		vd.Keys.KID = t.Kid
	}
	vd.Subject, vd.Issuer, vd.RequestedBy, vd.Dialog, vd.Claims = claims.Sub, claims.Iss, claims.ReqWL, claims.Dialog(), claims
	vd.DialogChecked = *dialog != "" || *dialogContext != ""
	if claims.Exp != nil {
		vd.Expires = expiresAt(time.Unix(int64(*claims.Exp), 0))
	}
	return vd.write(stdout, *asJSON)
}

// verifyTxn is txn verify's verification: the signature and claims against the keys
// of jwks for audience, and, when given, tctx.dlg against dialog and the dlg of
// dialogContext.
func verifyTxn(tok, jwks, audience, dialog, dialogContext, iss string, now int64, skew time.Duration) (*txntoken.Claims, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ks, err := txnKeys(ctx, jwks)
	if err != nil {
		return nil, err
	}
	opts := []txntoken.VerifierOption{txntoken.WithSkew(skew)}
	if now != 0 {
		opts = append(opts, txntoken.WithClock(func() time.Time { return time.Unix(now, 0) }))
	}
	if iss != "" {
		opts = append(opts, txntoken.WithIssuer(iss))
	}
	claims, err := txntoken.NewVerifier(ks, audience, opts...).Verify(ctx, tok)
	if err != nil {
		return nil, err
	}
	if dialog != "" {
		if err := txntoken.DialogMatches(claims, dialog); err != nil {
			return nil, err
		}
	}
	if dialogContext != "" {
		dc, err := dialogctx.Parse(dialogContext)
		if err != nil {
			return nil, err
		}
		if err := txntoken.DialogMatches(claims, dc.DLG()); err != nil {
			return nil, err
		}
	}
	return claims, nil
}

// txnKeys reads the TTS keys from a JWKS URL (fetched now, refetched on an unknown
// kid) or a JWKS file.
func txnKeys(ctx context.Context, src string) (keys.KeySet, error) {
	if strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://") {
		return keys.NewRemoteSet(ctx, src, keys.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))
	}
	return keys.LoadJWKSFile(src)
}

// witSubject reads the sub of a WIT without verifying it: the workload names itself as
// the iss of its own self_signed token, and the TTS checks both.
func witSubject(raw string) (identifier.ID, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return identifier.ID{}, errcode.New(errcode.MalformedToken, "the WIT is not a compact JWS")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return identifier.ID{}, errcode.Wrap(errcode.InvalidEncoding, err, "WIT payload")
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return identifier.ID{}, errcode.Wrap(errcode.InvalidEncoding, err, "WIT payload")
	}
	return identifier.Parse(c.Sub)
}

// tokenTypeURN accepts the short names of the token types.
func tokenTypeURN(s string) string {
	if strings.HasPrefix(s, "urn:") {
		return s
	}
	return "urn:ietf:params:oauth:token-type:" + s
}

// ttsMetadata reads a TTS's metadata (oauth.Discover). A TTS that cannot be reached is
// reported tts_unavailable, as these commands always have, not as_unavailable.
func ttsMetadata(ctx context.Context, hc *http.Client, url string) (*oauth.Metadata, error) {
	md, err := oauth.Discover(ctx, hc, url)
	if e, ok := errors.AsType[*errcode.Error](err); ok && e.Code == errcode.ASUnavailable {
		unavailable := *e
		unavailable.Code = errcode.TTSUnavailable
		return nil, &unavailable
	}
	return md, err
}
