package wpt

import (
	"context"
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Attach sets the WIT, the proof (as `Authorization: WPT`) on req. The proof must have
// been minted for this request's fields (see New).
func Attach(req *http.Request, witRaw, proof string) {
	req.Header.Set(wit.HeaderName, witRaw)
	req.Header.Set("Authorization", AuthScheme+" "+proof)
}

// SignRequest mints a proof for req as it stands (its Txn-Token and Dialog-Context
// fields and the named context-token fields) with key, and attaches it with the WIT.
// It refuses a request whose bound fields are repeated, as the verifier would.
//
// With ro.BindRequest it also sets Content-Digest over the body and binds it, the
// method, the path and the query through oth (OthMethod and the others): a receiver
// of this package then refuses the request when any of them changed on the way. A
// receiver that does not know these oth keys refuses the WPT (wpt-02 section 2: an oth
// entry not understood), so a route binds its requests only toward receivers that do.
func SignRequest(req *http.Request, key *keys.PrivateKey, witRaw, audience string, ro RequestOptions, opts ...MintOption) error {
	var rb *RequestBinding
	if ro.BindRequest {
		var err error
		if rb, err = bindRequest(req); err != nil {
			return err
		}
	}
	b, err := boundFields(req.Header, ro)
	if err != nil {
		return err
	}
	b.Request = rb
	proof, err := New(key, witRaw, audience, b, opts...)
	if err != nil {
		return err
	}
	Attach(req, witRaw, proof)
	return nil
}

// RequestOptions says which request fields count as context tokens for oth.
type RequestOptions struct {
	// ContextTokenFields are extra fields that carry context tokens (bound through oth).
	ContextTokenFields []string
	// BindRequest (SignRequest) binds the method, path, query and Content-Digest of the
	// request through oth. A verifier needs no option: it checks whichever of them the
	// proof names (Claims.BindsRequest says whether it named them all).
	BindRequest bool
}

// VerifyRequest extracts the WIT and the proof from req (wpt-02 carriage, or the wpt-01
// Workload-Proof-Token field) and verifies them with the bound fields, and with the
// method, path, query and body when the proof binds them (RequestOptions.BindRequest).
// It is VerifyRequestFields then Pending.Finish.
func (v *Verifier) VerifyRequest(ctx context.Context, req *http.Request, ro RequestOptions) (*Result, error) {
	p, err := v.VerifyRequestFields(ctx, req, ro)
	if err != nil {
		return nil, err
	}
	return p.Finish(ctx)
}

// VerifyRequestFields runs every check of VerifyRequest that does not need the body:
// the WIT, the proof and what it binds in the fields and the request line. req.Body is
// not touched, so a client that sent Expect: 100-continue has not been told to send
// it. The caller runs its own field checks, then Pending.Finish, which checks a bound
// body and claims the jti.
func (v *Verifier) VerifyRequestFields(ctx context.Context, req *http.Request, ro RequestOptions) (*Pending, error) {
	witRaw, err := single(req.Header, wit.HeaderName)
	if err != nil {
		return nil, err
	}
	authz := req.Header.Values("Authorization")
	legacy := req.Header.Values(LegacyHeader)
	var (
		proof string
		b     Bound
	)
	switch {
	case len(legacy) == 0:
		// wpt-02: exactly one Authorization field, scheme WPT (WPT-1).
		if len(authz) != 1 {
			if len(authz) == 0 {
				return nil, errcode.New(errcode.MissingCredential, "no Authorization: WPT field")
			}
			return nil, errcode.New(errcode.DuplicateField, "more than one Authorization field")
		}
		scheme, cred, ok := strings.Cut(strings.TrimSpace(authz[0]), " ")
		if !ok || !strings.EqualFold(scheme, AuthScheme) {
			return nil, errcode.New(errcode.MissingCredential, "Authorization scheme is not WPT")
		}
		proof = strings.TrimLeft(cred, " ")
	case len(legacy) == 1:
		proof = strings.TrimSpace(legacy[0])
		if len(authz) > 1 {
			return nil, errcode.New(errcode.DuplicateField, "more than one Authorization field")
		}
		if len(authz) == 1 {
			// wpt-01: the proof binds the access token through ath; the bearer token
			// itself never authenticates the caller (WPT-10).
			scheme, cred, ok := strings.Cut(strings.TrimSpace(authz[0]), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return nil, errcode.New(errcode.OtherTokenBindingMismatch, "wpt-01 carriage with a non-bearer Authorization field")
			}
			tok := strings.TrimSpace(cred)
			b.AccessToken = &tok
		}
	default:
		return nil, errcode.New(errcode.DuplicateField, "more than one %s field", LegacyHeader)
	}
	fields, err := boundFields(req.Header, ro)
	if err != nil {
		return nil, err
	}
	fields.AccessToken = b.AccessToken
	b = fields
	if b.Request, err = requestBinding(req); err != nil {
		return nil, err
	}
	res, err := v.verify(ctx, witRaw, proof, b)
	if err != nil {
		return nil, err
	}
	return &Pending{v: v, req: req, res: res}, nil
}

func single(h http.Header, name string) (string, error) {
	vals := h.Values(name)
	switch len(vals) {
	case 0:
		return "", errcode.New(errcode.MissingCredential, "no %s field", name)
	case 1:
		return strings.TrimSpace(vals[0]), nil
	}
	return "", errcode.New(errcode.DuplicateField, "more than one %s field", name)
}

// optional returns nil when the field is absent; a repeated field is refused (wpt-02
// leaves repeated fields unsupported; dialog-binding section 7 defers to it).
func optional(h http.Header, name string) (*string, error) {
	vals := h.Values(name)
	switch len(vals) {
	case 0:
		return nil, nil
	case 1:
		v := vals[0]
		return &v, nil
	}
	return nil, errcode.New(errcode.DuplicateField, "more than one %s field", name)
}

// boundFields collects the fields a proof binds: Txn-Token, Dialog-Context and the
// configured context-token fields.
func boundFields(h http.Header, ro RequestOptions) (Bound, error) {
	var (
		b   Bound
		err error
	)
	if b.TxnToken, err = optional(h, TxnTokenHeader); err != nil {
		return b, err
	}
	if b.DialogContext, err = optional(h, DialogContextHeader); err != nil {
		return b, err
	}
	for _, name := range ro.ContextTokenFields {
		val, err := optional(h, name)
		if err != nil {
			return b, err
		}
		if val != nil {
			if b.Other == nil {
				b.Other = map[string]string{}
			}
			b.Other[strings.ToLower(name)] = *val
		}
	}
	return b, nil
}
