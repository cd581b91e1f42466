package wit

import (
	"crypto/rand"
	"encoding/json"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// KeyFunc returns the key that signs now (e.g. keys.Ring.Active).
type KeyFunc func() *keys.PrivateKey

// Issuer mints WITs.
type Issuer struct {
	iss         string
	key         KeyFunc
	now         func() time.Time
	maxLifetime time.Duration
}

// NewIssuer returns an issuer named iss (may be "") that signs with key().
func NewIssuer(iss string, key KeyFunc, opts ...IssuerOption) *Issuer {
	i := &Issuer{iss: iss, key: key, now: time.Now, maxLifetime: DefaultMaxLifetime}
	for _, o := range opts {
		o.applyIssuer(i)
	}
	if i.now == nil {
		i.now = time.Now
	}
	return i
}

// Issue mints a WIT for sub bound to cnf, valid for ttl.
func (i *Issuer) Issue(sub identifier.ID, cnf *keys.PublicKey, ttl time.Duration) (string, *Claims, error) {
	if sub.IsZero() {
		return "", nil, errcode.New(errcode.InvalidRequest, "sub is required")
	}
	if cnf == nil {
		return "", nil, errcode.New(errcode.InvalidRequest, "a confirmation key is required")
	}
	if ttl <= 0 {
		return "", nil, errcode.New(errcode.InvalidRequest, "ttl must be positive")
	}
	if ttl > i.maxLifetime {
		return "", nil, errcode.New(errcode.LifetimeTooLong, "ttl %s exceeds the limit %s", ttl, i.maxLifetime)
	}
	cnfJSON, err := cnf.ConfirmationJSON()
	if err != nil {
		return "", nil, err
	}
	now := i.now()
	iat := jose.NumericDate(now.Unix())
	exp := jose.NumericDate(now.Add(ttl).Unix())
	c := &Claims{Iss: i.iss, Sub: sub.String(), Iat: &iat, Exp: &exp, Jti: rand.Text(), Cnf: &Confirmation{JWK: json.RawMessage(cnfJSON)}}
	tok, err := jose.SignClaims(Type, i.key(), true, c)
	if err != nil {
		return "", nil, err
	}
	return tok, c, nil
}
