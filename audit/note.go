package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/dialogtrust/dialogtrust/keys"
	"golang.org/x/mod/sumdb/note"
)

// The signed note format (golang.org/x/mod/sumdb/note) names each signature's key by a
// name and a 32-bit key hash. note's own keys are Ed25519 only; a service here signs
// with its JOSE key (ES256 or Ed25519, package keys, possibly in an HSM), so these
// adapt a keys.PrivateKey and a keys.PublicKey to note.Signer and note.Verifier. The
// note's text, its signature lines and their parsing stay the library's.
//
// The name is NamePrefix + the key's kid (so a JWKS finds the key); the key hash is the
// first four octets of SHA-256(name "\n" alg "\n" RFC 7638 thumbprint), big-endian,
// binding the name to the key as note.NewVerifier's hash does. The signature is the
// JWS one: ES256 raw r||s (64 octets), or Ed25519.

// NamePrefix begins the note key name of every checkpoint signature.
const NamePrefix = "dialogtrust-audit-"

func noteName(kid string) (string, error) {
	name := NamePrefix + kid
	// note.isValidName: non-empty, no Unicode spaces, no '+'.
	if kid == "" || strings.ContainsAny(name, "+ \t\n\r") {
		return "", fmt.Errorf("audit: key id %q cannot name a signed note's key", kid)
	}
	return name, nil
}

func keyHash(name string, pub *keys.PublicKey) uint32 {
	h := sha256.Sum256([]byte(name + "\n" + pub.Alg() + "\n" + pub.Thumbprint()))
	return binary.BigEndian.Uint32(h[:4])
}

// noteKey is what a signer and a verifier of one key both name: the key's note name
// and its key hash.
type noteKey struct {
	name string
	hash uint32
}

func newNoteKey(pub *keys.PublicKey) (noteKey, error) {
	name, err := noteName(pub.KID())
	if err != nil {
		return noteKey{}, err
	}
	return noteKey{name: name, hash: keyHash(name, pub)}, nil
}

func (n noteKey) Name() string    { return n.name }
func (n noteKey) KeyHash() uint32 { return n.hash }

type noteSigner struct {
	noteKey
	k *keys.PrivateKey
}

// NoteSigner is a note.Signer over k.
func NoteSigner(k *keys.PrivateKey) (note.Signer, error) {
	nk, err := newNoteKey(k.Public())
	if err != nil {
		return nil, err
	}
	return &noteSigner{noteKey: nk, k: k}, nil
}

func (s *noteSigner) Sign(msg []byte) ([]byte, error) { return s.k.Sign(msg) }

type noteVerifier struct {
	noteKey
	k *keys.PublicKey
}

// NoteVerifier is a note.Verifier over k.
func NoteVerifier(k *keys.PublicKey) (note.Verifier, error) {
	nk, err := newNoteKey(k)
	if err != nil {
		return nil, err
	}
	return &noteVerifier{noteKey: nk, k: k}, nil
}

func (v *noteVerifier) Verify(msg, sig []byte) bool { return v.k.Verify(msg, sig) }

// Verifiers is note.Verifiers over a set of public keys (a JWKS).
func Verifiers(ks []*keys.PublicKey) (note.Verifiers, error) {
	var vs []note.Verifier
	for _, k := range ks {
		v, err := NoteVerifier(k)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return note.VerifierList(vs...), nil
}
