// Package console is the operator's page (issue 26): served on the TTS's admin
// listener under /admin/, beside the revocations admin API (package revokeapi). It shows
// the recent dialogs of the TTS's own audit trail (package audit), draws one dialog as a
// picture (its workloads, the tokens issued and refused, the requests receivers and
// ingresses accepted or refused with their hops, its linked dialogs and the tokens that
// join them, its revocations), and revokes or lifts a dialog from a button, through
// revokeapi.Handler.Revoke and Lift: the API's own path, with the operator's identity.
//
// Read console.go first (the routes and the order of the checks), then sessions.go
// (how an operator signs in), model.go (what the trail becomes) and draw.go (the
// picture).
//
// It is a boundary, attacked from outside (docs/operator.md "The operator's page"):
//   - The operator signs in with an administrator's client certificate (mutual TLS,
//     checked by revokeapi as for the API) or with a one-time login link that an
//     administrator, authenticated at the API, asked for (POST /admin/sessions,
//     `dialogtrust revoke page`): a 256-bit code, kept hashed, good once within a minute.
//     The link's GET spends nothing (a chat's preview or a link checker fetches it too):
//     it answers a page whose Sign in button posts the code from the page's own origin,
//     and that post exchanges it for a fresh server-side session (never one the browser
//     brought) in an HttpOnly, SameSite=Strict cookie (__Host- and Secure under TLS).
//   - The cookie is accepted on the page's routes only; the JSON API never reads it.
//   - A form POST needs the request's Origin to be the page's own (and Sec-Fetch-Site,
//     when sent, same-origin) and the session's synchronizer token (compared in constant
//     time); it is authenticated before its body is read.
//   - Pages are html/template (contextual escaping of every string of the trail, which
//     an attacker may have chosen), the picture is SVG drawn on the server, the one style
//     sheet is embedded; there is no script. Every answer carries a Content-Security-Policy
//     that allows nothing else (default-src 'none'), frame-ancestors 'none', nosniff,
//     no-store, and a same-origin referrer policy (no referrer leaves the origin).
//   - Everything read is bounded: the records read from the trail, the dialog id, the
//     dialogs and records drawn, the dialogs listed as linked, a form's body (whose
//     fields are never repeated).
package console
