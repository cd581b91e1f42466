package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
)

// maxRawRequest bounds a request read from standard input.
const maxRawRequest = 1 << 20

func readRawRequest(stdin io.Reader) (*http.Request, error) {
	req, err := http.ReadRequest(bufio.NewReader(io.LimitReader(stdin, maxRawRequest)))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "standard input is not an HTTP/1.1 request")
	}
	return req, nil
}

func httpsigSign(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("httpsig sign", stderr)
	keyFile := fs.String("key", "", "the workload's private JWK file (the WIT's key)")
	witArg := fs.String("wit", "", "the WIT (value or @file)")
	aud := fs.String("aud", "", "wimse-aud: the recipient, by default its URI without query")
	signResponse := fs.Bool("sign-response", false, "set wimse-sign-response: require a signed response")
	ttl := fs.Duration("ttl", httpsig.DefaultTTL, "signature lifetime (expires - created)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"key": *keyFile, "wit": *witArg, "aud": *aud}); err != nil {
		return err
	}
	k, err := loadPrivateKey(*keyFile, nil)
	if err != nil {
		return err
	}
	w, err := readValue(*witArg, nil)
	if err != nil {
		return err
	}
	req, err := readRawRequest(stdin)
	if err != nil {
		return err
	}
	if _, err := httpsig.NewSigner(k, w, httpsig.WithTTL(*ttl)).SignRequest(req, *aud, httpsig.RequestSignResponse(*signResponse)); err != nil {
		return err
	}
	// Request.Write adds a User-Agent unless one is set; an empty one is not written.
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""}
	}
	return req.Write(stdout)
}

func httpsigVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("httpsig verify", stderr)
	trustFile := fs.String("trust", "", "JWKS file of the trusted WIT issuer keys")
	aud := fs.String("aud", "", "the wimse-aud value(s) this recipient accepts")
	now := fs.Int64("now", 0, "verify at this Unix time instead of the clock")
	skew := fs.Duration("skew", 30*time.Second, "allowed clock skew")
	maxAge := fs.Duration("max-age", 0, "refuse signatures older than this (0: no limit beyond expires)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"trust": *trustFile, "aud": *aud}); err != nil {
		return err
	}
	wits, err := witValidator(*trustFile, "", *now, *skew)
	if err != nil {
		return err
	}
	req, err := readRawRequest(stdin)
	if err != nil {
		return err
	}
	opts := []httpsig.VerifierOption{httpsig.WithAudiences(*aud), httpsig.WithSkew(*skew)}
	if *now != 0 {
		opts = append(opts, httpsig.WithClock(func() time.Time { return time.Unix(*now, 0) }))
	}
	if *maxAge > 0 {
		opts = append(opts, httpsig.WithMaxAge(*maxAge))
	}
	// No replay store: a one-shot command cannot remember nonces.
	res, err := httpsig.NewVerifier(wits, opts...).VerifyRequest(context.Background(), req)
	if err != nil {
		return err
	}
	return writeJSON(stdout, map[string]any{
		"sub": res.WIT.Subject.String(), "wit_iss": res.WIT.Claims.Iss, "label": res.Label,
		"created": res.Created.Unix(), "expires": res.Expires.Unix(), "nonce": res.Nonce,
		"wimse_aud": res.Audience, "sign_response": res.SignResponse, "covered": res.Covered,
	})
}
