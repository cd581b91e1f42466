// Package revokeapi is the admin API of revocations (issue 26), served on the TTS's
// admin listener: GET lists the live revocations, POST makes one, DELETE lifts one, at
// one path (Path); POST SessionsPath mints a login link to the operator's page. `dialogtrust revoke` is its client (Client).
//
// Read handler.go first (the order of the checks), then client.go.
//
// It is a boundary, attacked from outside. Every request is authenticated before any
// octet of its body is read: by mutual TLS (a workload identity certificate chaining to
// the configured roots, package wic) or by a WIT with a WIMSE HTTP signature
// (http-signature-07; package httpsig: the signature's audience is the API's URL, its
// nonce is claimed once) from a workload the configuration names as an administrator.
// The API accepts no bearer secret and no cookie: the operator's page (package console)
// accepts its session cookie on its own routes only, always with its CSRF token, and
// revokes through Handler.Revoke, the one path of the API's POST too. POST SessionsPath
// (body {}, authenticated as above) gives an administrator a one-time login link to that
// page (Client.NewSession, `dialogtrust revoke page`). Cross-site request forgery finds nothing to
// ride on and is refused besides: a request with an Origin other than the configured
// ones, or a Sec-Fetch-Site other than same-origin or none, is origin_not_allowed, and a
// POST must be application/json, which no HTML form can send. The body is bounded
// (MaxBody) and decoded strictly (unknown or repeated members refused). A workload of
// a trust domain the TTS does not serve is not this domain's to revoke (not_authorized);
// dialogs and transactions are revoked in this domain's store only, so a revocation
// never reaches another domain's services.
package revokeapi
