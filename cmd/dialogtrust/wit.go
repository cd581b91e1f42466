package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

func witIssue(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("wit issue", stderr)
	issuerKey := fs.String("issuer-key", "", "the issuer's private JWK file")
	iss := fs.String("iss", "", "issuer URI (iss claim)")
	sub := fs.String("sub", "", "workload identifier (sub claim)")
	cnfKey := fs.String("cnf-key", "", "the workload's JWK file (private or public); its public half goes into cnf.jwk")
	ttl := fs.Duration("ttl", time.Hour, "lifetime")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"issuer-key": *issuerKey, "iss": *iss, "sub": *sub, "cnf-key": *cnfKey}); err != nil {
		return err
	}
	ik, err := loadPrivateKey(*issuerKey, stdin)
	if err != nil {
		return err
	}
	cnf, err := loadAnyPublicKey(*cnfKey)
	if err != nil {
		return err
	}
	id, err := identifier.Parse(*sub)
	if err != nil {
		return err
	}
	tok, _, err := wit.NewIssuer(*iss, func() *keys.PrivateKey { return ik }).Issue(id, cnf, *ttl)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, tok+"\n")
	return err
}

func witVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("wit verify", stderr)
	trustFile := fs.String("trust", "", "JWKS of the trusted issuer keys: a file, or an http(s) URL fetched once")
	iss := fs.String("iss", "", "require this iss")
	now := fs.Int64("now", 0, "verify at this Unix time instead of the clock")
	skew := fs.Duration("skew", wit.DefaultSkew, "allowed clock skew")
	asJSON := fs.Bool("json", false, "print one JSON object: the verdict (what was verified, the keys, the subject) and the claims, or the refusal's code and kind")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"trust": *trustFile}); err != nil {
		return err
	}
	tok, err := tokenArg(fs, stdin)
	if err != nil {
		return err
	}
	vd := verdict{Token: "WIT"}
	vd.Keys.JWKS = *trustFile
	v, err := witValidator(*trustFile, *iss, *now, *skew)
	if err != nil {
		return vd.refuse(stdout, *asJSON, err)
	}
	w, err := v.Validate(context.Background(), tok)
	if err != nil {
		return vd.refuse(stdout, *asJSON, err)
	}
	vd.Keys.KID, vd.Subject, vd.Issuer, vd.Claims = w.IssuerKID, w.SubjectString(), w.Claims.Iss, w.Claims
	if w.Claims.Exp != nil {
		vd.Expires = expiresAt(time.Unix(int64(*w.Claims.Exp), 0))
	}
	return vd.write(stdout, *asJSON)
}

func witValidator(trustFile, iss string, now int64, skew time.Duration) (*wit.Validator, error) {
	set, err := loadJWKS(trustFile)
	if err != nil {
		return nil, err
	}
	opts := []wit.ValidatorOption{wit.WithSkew(skew)}
	if now != 0 {
		opts = append(opts, wit.WithClock(func() time.Time { return time.Unix(now, 0) }))
	}
	if iss != "" {
		opts = append(opts, wit.WithIssuers(iss))
	}
	return wit.NewValidator(fileTrust{set}, opts...), nil
}

// fileTrust trusts the keys of one JWKS file for every trust domain: the command line's
// --trust names the issuer keys directly.
type fileTrust struct{ set keys.KeySet }

func (f fileTrust) ForTrustDomain(string) (keys.KeySet, error) { return f.set, nil }

func tokenArg(fs *flag.FlagSet, stdin io.Reader) (string, error) {
	switch fs.NArg() {
	case 0:
		return readValue("-", stdin)
	case 1:
		return readValue(fs.Arg(0), stdin)
	}
	return "", usageError{"one token at most"}
}

// loadAnyPublicKey reads a JWK file holding a private or public key.
func loadAnyPublicKey(path string) (*keys.PublicKey, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		D string `json:"d"`
	}
	_ = json.Unmarshal(b, &probe)
	if probe.D != "" {
		k, err := keys.ParsePrivateJWK(b)
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	}
	return keys.ParsePublicJWK(b)
}

// maxJWKSSize bounds a JWKS fetched from a URL (keys.ParseJWKS refuses more anyway).
const maxJWKSSize = 1 << 20

// loadJWKS reads a JWKS from a file or, for an http(s) URL, fetches it once. The URL is
// the operator's choice on the command line, i.e. configured out of band (WIT-1), never
// taken from a token.
func loadJWKS(src string) (*keys.StaticSet, error) {
	if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "http://") {
		return keys.LoadJWKSFile(src)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(src)
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "fetching the JWKS")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, nil, "fetching the JWKS: HTTP %d", res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSSize+1))
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "reading the JWKS")
	}
	if len(b) > maxJWKSSize {
		return nil, errcode.New(errcode.InvalidKey, "JWKS larger than %d octets", maxJWKSSize)
	}
	return keys.ParseJWKS(b)
}
