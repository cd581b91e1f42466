package tts

import (
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// refused are RFC 8693 parameters a TTS does not use (oauth.md 1.3): a caller that sends
// them expects an effect (an actor, a resource restriction) the token would not have.
var refused = []struct{ name, why string }{
	{"actor_token", "actor_token was removed from Transaction Tokens and is not accepted"},
	{"actor_token_type", "actor_token was removed from Transaction Tokens and is not accepted"},
	{"resource", "resource is not used by a Transaction Token Service; name the trust domain in audience"},
}

// ParseTokenRequest parses a form-encoded Txn-Token request body: oauth.ParseTokenRequest,
// then the TTS's own parameter rules (checkTxnRequest). Every rejection is an
// *errcode.Error with code invalid_request (body_too_large for an oversized body).
func ParseTokenRequest(body []byte) (*oauth.TokenRequest, error) {
	tr, err := oauth.ParseTokenRequest(body)
	if err != nil {
		return nil, err
	}
	if err := checkTxnRequest(tr); err != nil {
		return nil, err
	}
	return tr, nil
}

// checkTxnRequest applies what a TTS refuses or reads beyond the form (oauth.md 1.3):
// actor_token, actor_token_type and resource are refused; request_context and
// request_details are decoded, and request_details.dlg checked.
func checkTxnRequest(tr *oauth.TokenRequest) error {
	for _, p := range refused {
		if tr.Has(p.name) {
			return invalid("%s", p.why)
		}
	}
	return tr.DecodeContext()
}

// checkRequired applies the REQUIRED rules of oauth.md 1.3 in a fixed order, so that
// the error a client sees does not depend on map iteration: first the grant type
// (unsupported_grant_type), then the requested token type, then the other parameters.
func checkRequired(r *oauth.TokenRequest) error {
	switch {
	case r.GrantType == "":
		return invalid("grant_type is required")
	case r.GrantType != GrantTypeTokenExchange:
		return errcode.New(errcode.UnsupportedGrantType, "grant_type must be %s", GrantTypeTokenExchange)
	case r.RequestedTokenType == "":
		return invalid("requested_token_type is required")
	case r.RequestedTokenType != TokenTypeTxnToken && r.RequestedTokenType != TokenTypeTxnToken08:
		return errcode.New(errcode.UnsupportedTokenType, "requested_token_type must be %s", TokenTypeTxnToken)
	case r.Audience == "":
		return invalid("audience is required: the trust domain")
	case len(r.Scope) == 0:
		return invalid("scope is required and must not be empty")
	case r.SubjectToken == "":
		return invalid("subject_token is required")
	case r.SubjectTokenType == "":
		return invalid("subject_token_type is required")
	}
	return nil
}

func invalid(format string, args ...any) *errcode.Error {
	return errcode.New(errcode.InvalidRequest, format, args...)
}
