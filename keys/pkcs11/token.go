//go:build cgo

package pkcs11

import (
	"context"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ThalesGroup/crypto11"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	p11 "github.com/miekg/pkcs11"
)

// Available reports whether this binary can open a token (it was built with cgo).
const Available = true

// Token is a logged-in PKCS#11 token and the label of one signer's keys in it. It is
// safe for concurrent use (crypto11 keeps a pool of sessions).
type Token struct {
	c   Config
	ctx *crypto11.Context
}

// Open loads the module, finds the token, and logs in with the PIN. A module that
// cannot be loaded and a token that is not there are pkcs11_unavailable (could not be
// completed); a PIN the token refuses is pkcs11_login_failed. Another Token of the same
// process on the same token shares its login: PKCS#11 logs an application in per token,
// so the PIN is checked by the first Open only.
func Open(c Config) (*Token, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	ctx, err := crypto11.Configure(&crypto11.Config{Path: c.Module, SlotNumber: c.Slot, TokenLabel: c.TokenLabel, Pin: c.PIN})
	if err != nil {
		return nil, openError(c, err)
	}
	return &Token{c: c, ctx: ctx}, nil
}

// openError says what went wrong in words an operator can act on.
func openError(c Config, err error) error {
	var perr p11.Error
	if errors.As(err, &perr) {
		switch perr {
		case p11.CKR_PIN_INCORRECT, p11.CKR_PIN_INVALID, p11.CKR_PIN_LEN_RANGE, p11.CKR_PIN_EXPIRED:
			return errcode.Wrap(errcode.PKCS11LoginFailed, err, "pkcs11: %s refused the PIN", c.where())
		case p11.CKR_PIN_LOCKED:
			return errcode.Wrap(errcode.PKCS11LoginFailed, err, "pkcs11: the PIN of %s is locked", c.where())
		}
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "could not find PKCS#11 token"):
		return errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: no %s (is the token initialised, and the slot or label right?)", c.where())
	case strings.Contains(msg, "failed to open module"):
		return errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: the module %s could not be loaded", c.Module)
	}
	return errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: opening %s", c.where())
}

// Close logs out and releases the sessions.
func (t *Token) Close() error { return t.ctx.Close() }

// objectsMu serialises, within the process, what changes or lists a token's objects
// (Create, Destroy, the listing of Keys): SoftHSM2 2.6 fails a key generation
// (CKR_FUNCTION_FAILED, CKR_GENERAL_ERROR, CKR_OBJECT_HANDLE_INVALID) that runs while
// another session of the process destroys or lists objects of the token. Signing, the
// hot path, is not serialised. Other processes on the token are not affected by it.
var objectsMu sync.Mutex

// idPrefix starts the CKA_ID of every key this package creates:
// "dt1/<generation>/<creation time, Unix nanoseconds>/<8 random hex digits>". The
// random part keeps two keys created in the same nanosecond apart.
const idPrefix = "dt1/"

func makeID(generation uint64, created time.Time) ([]byte, error) {
	r := make([]byte, 4)
	if _, err := rand.Read(r); err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "%s%d/%d/%s", idPrefix, generation, created.UnixNano(), hex.EncodeToString(r)), nil
}

func parseID(id []byte) (generation uint64, created time.Time, ok bool) {
	parts := strings.Split(string(id), "/")
	if len(parts) != 4 || parts[0]+"/" != idPrefix {
		return 0, time.Time{}, false
	}
	g, err1 := strconv.ParseUint(parts[1], 10, 64)
	ns, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || g == 0 {
		return 0, time.Time{}, false
	}
	return g, time.Unix(0, ns), true
}

// Keys implements keys.KeyStore: the key pairs labelled c.Label. A key under the
// label whose CKA_ID this package did not write is an error, not ignored: the
// operator's key must not be mistaken for a generation, nor silently passed over.
//
// Another replica may destroy a key between the search and the reading of its
// attributes (CKR_OBJECT_HANDLE_INVALID, or CKR_GENERAL_ERROR from SoftHSM2 2.6 when
// the object's file vanished while it read it): the listing is then made again.
func (t *Token) Keys(context.Context) ([]keys.StoredKey, error) {
	var err error
	for range listAttempts {
		var out []keys.StoredKey
		if out, err = t.list(); !isHandleInvalid(err) && !isGeneralError(err) {
			return out, err
		}
	}
	return nil, err
}

// listAttempts bounds how often Keys lists again after a key vanished under it.
const listAttempts = 4

func isGeneralError(err error) bool {
	var perr p11.Error
	return errors.As(err, &perr) && perr == p11.CKR_GENERAL_ERROR
}

func isHandleInvalid(err error) bool {
	var perr p11.Error
	return errors.As(err, &perr) && perr == p11.CKR_OBJECT_HANDLE_INVALID
}

func (t *Token) list() ([]keys.StoredKey, error) {
	objectsMu.Lock()
	defer objectsMu.Unlock()
	signers, err := t.ctx.FindKeyPairs(nil, []byte(t.c.Label))
	if err != nil {
		return nil, errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: listing the keys labelled %q", t.c.Label)
	}
	out := make([]keys.StoredKey, 0, len(signers))
	for _, s := range signers {
		attr, err := t.ctx.GetAttribute(s, crypto11.CkaId)
		if err != nil {
			return nil, errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: reading a key's CKA_ID")
		}
		g, created, ok := parseID(attr.Value)
		if !ok {
			return nil, fmt.Errorf("pkcs11: a key labelled %q has CKA_ID %q, not one this service created: give the service its own label", t.c.Label, errcode.Cut(string(attr.Value)))
		}
		k, err := keys.NewExternalKey(s, t.alg())
		if err != nil {
			return nil, err
		}
		out = append(out, keys.StoredKey{Key: k, Generation: g, Created: created, Handle: s})
	}
	return out, nil
}

func (t *Token) alg() string {
	if t.c.Alg == "" {
		return keys.ES256
	}
	return t.c.Alg
}

// Create implements keys.KeyStore: an ES256 key pair generated in the token, the
// private half sensitive, private (login needed) and not extractable.
func (t *Token) Create(_ context.Context, alg string, generation uint64, created time.Time) (keys.StoredKey, error) {
	objectsMu.Lock()
	defer objectsMu.Unlock()
	if err := CheckAlg(alg); err != nil {
		return keys.StoredKey{}, err
	}
	id, err := makeID(generation, created)
	if err != nil {
		return keys.StoredKey{}, err
	}
	pub, err := crypto11.NewAttributeSetWithIDAndLabel(id, []byte(t.c.Label))
	if err != nil {
		return keys.StoredKey{}, err
	}
	priv := pub.Copy()
	for _, a := range []struct {
		typ crypto11.AttributeType
		v   bool
	}{{crypto11.CkaSensitive, true}, {crypto11.CkaExtractable, false}, {crypto11.CkaPrivate, true}, {crypto11.CkaToken, true}} {
		if err := priv.Set(a.typ, a.v); err != nil {
			return keys.StoredKey{}, err
		}
	}
	s, err := t.ctx.GenerateECDSAKeyPairWithAttributes(pub, priv, elliptic.P256())
	if err != nil {
		return keys.StoredKey{}, errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: generating a key in %s", t.c.where())
	}
	k, err := keys.NewExternalKey(s, t.alg())
	if err != nil {
		return keys.StoredKey{}, err
	}
	return keys.StoredKey{Key: k, Generation: generation, Created: created, Handle: s}, nil
}

// Destroy implements keys.KeyStore. A key another replica destroyed first is no error.
func (t *Token) Destroy(_ context.Context, k keys.StoredKey) error {
	objectsMu.Lock()
	defer objectsMu.Unlock()
	s, ok := k.Handle.(crypto11.Signer)
	if !ok {
		return fmt.Errorf("pkcs11: key %s is not one of this token's", k.Key.KID())
	}
	err := s.Delete()
	if err == nil || isHandleInvalid(err) {
		return nil
	}
	return errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: destroying key %s", k.Key.KID())
}

// Key returns the one key pair labelled c.Label, which the operator created in the
// token (a fixed key: the proxy's assertion or handoff key). A private key that could
// leave the token (CKA_EXTRACTABLE true or CKA_SENSITIVE false) is refused with
// invalid_key: the operator created it so, and its value may already be elsewhere.
func (t *Token) Key() (*keys.PrivateKey, error) {
	signers, err := t.ctx.FindKeyPairs(nil, []byte(t.c.Label))
	if err != nil {
		return nil, errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: finding the key labelled %q", t.c.Label)
	}
	if len(signers) != 1 {
		return nil, errcode.New(errcode.UnknownKey, "pkcs11: %s holds %d key pairs labelled %q, want exactly one", t.c.where(), len(signers), t.c.Label)
	}
	attrs, err := t.ctx.GetAttributes(signers[0], []crypto11.AttributeType{crypto11.CkaSensitive, crypto11.CkaExtractable})
	if err != nil {
		return nil, errcode.Unavailable(errcode.PKCS11Unavailable, err, "pkcs11: reading the attributes of the key labelled %q", t.c.Label)
	}
	if !attrTrue(attrs[crypto11.CkaSensitive]) || attrTrue(attrs[crypto11.CkaExtractable]) {
		return nil, errcode.New(errcode.InvalidKey, "pkcs11: the private key labelled %q in %s can leave the token (CKA_SENSITIVE false or CKA_EXTRACTABLE true): create it sensitive and not extractable", t.c.Label, t.c.where())
	}
	return keys.NewExternalKey(signers[0], t.alg())
}

// attrTrue reports whether a boolean attribute is CK_TRUE (a missing one is not).
func attrTrue(a *crypto11.Attribute) bool {
	return a != nil && len(a.Value) == 1 && a.Value[0] != 0
}
