package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// verdict is what `wit verify` and `txn verify` conclude: first one line saying what
// was verified, against which keys and for whom (for a Txn-Token: which dialog, which
// audience, until when), then the claims; with --json one object holding both, for
// scripts. A refusal says its code and whether the check failed or could not be
// completed (errcode kinds).
type verdict struct {
	Verified bool   `json:"verified"`
	Token    string `json:"token"` // "WIT" or "Txn-Token"
	// Keys are the verifier's: the JWKS the command was given and the kid of the key
	// that signed (empty when the token named none and the set's one key was used).
	Keys struct {
		JWKS string `json:"jwks"`
		KID  string `json:"kid,omitempty"`
	} `json:"keys"`
	Subject     string `json:"subject,omitempty"`
	Issuer      string `json:"issuer,omitempty"`
	Audience    string `json:"audience,omitempty"`
	RequestedBy string `json:"requested_by,omitempty"`
	// Dialog is the Txn-Token's tctx.dlg; DialogChecked says that --dialog or
	// --dialog-context required it.
	Dialog        string `json:"dialog,omitempty"`
	DialogChecked bool   `json:"dialog_checked,omitempty"`
	Expires       string `json:"expires,omitempty"` // RFC 3339, UTC
	Claims        any    `json:"claims,omitempty"`
	// Code, Kind and Detail are a refusal's: Kind is "failed" (the token was checked
	// and found bad) or "could_not_complete" (a check could not be made, such as a JWKS
	// that did not answer).
	Code   string `json:"code,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// expiresAt formats a NumericDate's time for the verdict.
func expiresAt(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// line is the verdict in one line for people.
func (v verdict) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verified %s", v.Token)
	switch v.Token {
	case "WIT":
		fmt.Fprintf(&b, " of %s, issued by %s", v.Subject, v.Issuer)
	default:
		switch {
		case v.DialogChecked:
			fmt.Fprintf(&b, " for dialog %s (tctx.dlg checked)", v.Dialog)
		case v.Dialog != "":
			fmt.Fprintf(&b, " for dialog %s (tctx.dlg, not checked: no --dialog)", v.Dialog)
		default:
			b.WriteString(" for no dialog (no tctx.dlg)")
		}
		fmt.Fprintf(&b, ", audience %s, subject %s, requested by %s, issued by %s", v.Audience, v.Subject, v.RequestedBy, v.Issuer)
	}
	b.WriteString(", signed by ")
	if v.Keys.KID != "" {
		fmt.Fprintf(&b, "key %q of ", v.Keys.KID)
	} else {
		b.WriteString("a key of ")
	}
	fmt.Fprintf(&b, "the JWKS %s; expires %s", v.Keys.JWKS, v.Expires)
	return b.String()
}

// write prints a verified verdict: the line and the claims, or one JSON object.
func (v verdict) write(w io.Writer, asJSON bool) error {
	v.Verified = true
	if asJSON {
		return writeJSON(w, v)
	}
	if _, err := fmt.Fprintln(w, v.line()); err != nil {
		return err
	}
	return writeJSON(w, v.Claims)
}

// refuse returns err, the refusal of a verification, after writing it as one JSON
// object when asJSON (the command's exit status and standard error stay report's). An
// error that is not a rejection (a usage error) is returned as it is.
func (v verdict) refuse(w io.Writer, asJSON bool, err error) error {
	ce, ok := errors.AsType[*errcode.Error](err)
	if !asJSON || !ok {
		return err
	}
	v.Verified, v.Claims = false, nil
	v.Code, v.Kind, v.Detail = string(ce.Code), ce.Kind.String(), err.Error()
	if werr := writeJSON(w, v); werr != nil {
		return werr
	}
	return err
}

// kindLine is report's third line for a rejection: whether the check failed or could
// not be completed.
func kindLine(k errcode.Kind) string {
	if k == errcode.Incomplete {
		return "kind: could_not_complete (the check could not be made; trying again may succeed)"
	}
	return "kind: failed (the check was made and refused)"
}
