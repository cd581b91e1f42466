package wic

// This file writes certificates with cryptobyte instead of crypto/x509.CreateCertificate
// because the WIMSE conformance vectors (rcgen layout, wimsey SOURCE.md "mtls") fix bytes
// that CreateCertificate chooses by itself:
//   - extension order: the vectors have subjectKeyIdentifier before basicConstraints
//     (CA) and subjectAltName before extKeyUsage (WIC); CreateCertificate writes
//     basicConstraints before the SKI and extKeyUsage before the SAN;
//   - commonName is a UTF8String; CreateCertificate writes a printable name as
//     PrintableString;
//   - the WIC has no authorityKeyIdentifier; CreateCertificate adds one whenever the
//     issuer has an SKI;
//   - the SKI is SHA-256 over the whole SubjectPublicKeyInfo DER (rcgen), where
//     CreateCertificate hashes only the subjectPublicKey bits (RFC 7093 method 1), and
//     the serial is derived from the key rather than chosen by the caller.
// Each could be worked around piecemeal (RawSubject, ExtraExtensions, a parent stripped
// of its SKI), but byte equality would then rest on unexported ordering choices inside
// crypto/x509 that may change between Go releases. Writing the TBSCertificate here keeps
// the layout in one place and under test (vectors_test.go).
//
// The layout, read from the recorded DER:
//
//	Certificate  SEQUENCE { tbs, AlgorithmIdentifier, BIT STRING signature }
//	tbs          [0] { INTEGER 2 }                      -- v3
//	             INTEGER serial                         -- SHA-256(subjectPublicKey bits)[0:20], top bit cleared, minimal DER
//	             AlgorithmIdentifier                    -- OID only, no NULL: ecdsa-with-SHA256 or Ed25519, from the CA key
//	             issuer Name                            -- the CA's subject, copied raw
//	             Validity { UTCTime, UTCTime }          -- GeneralizedTime outside 1950..2049 (RFC 5280 4.1.2.5)
//	             subject Name                           -- SET { SEQUENCE { 2.5.4.3, UTF8String } }
//	             SubjectPublicKeyInfo                   -- as crypto/x509.MarshalPKIXPublicKey writes it
//	             [3] { SEQUENCE OF Extension }
//	CA:  subjectKeyIdentifier (non-critical, SHA-256(SPKI DER)[0:20]),
//	     basicConstraints (critical, cA TRUE, no pathLen). No keyUsage, no AKI.
//	WIC: subjectAltName (non-critical, one uniformResourceIdentifier),
//	     extKeyUsage (non-critical, clientAuth then serverAuth). No keyUsage, SKI, AKI or
//	     basicConstraints.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"math/big"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// The subject names of the conformance layout. They carry no identity: the identity of a
// WIC is its URI SAN alone (workload-creds-02 section 6.1).
const (
	CACommonName  = "wimsey workload CA"
	WICCommonName = "wimsey workload"
)

var (
	oidCommonName         = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidSubjectKeyID       = asn1.ObjectIdentifier{2, 5, 29, 14}
	oidSubjectAltName     = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidBasicConstraints   = asn1.ObjectIdentifier{2, 5, 29, 19}
	oidExtKeyUsage        = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidKPServerAuth       = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 1}
	oidKPClientAuth       = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 2}
	oidSigECDSAWithSHA256 = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}
	oidSigEd25519         = asn1.ObjectIdentifier{1, 3, 101, 112}
	tagURI                = cbasn1.Tag(6).ContextSpecific()
	tagExplicitVersion    = cbasn1.Tag(0).ContextSpecific().Constructed()
	tagExplicitExtensions = cbasn1.Tag(3).ContextSpecific().Constructed()
)

// RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050 (and before 1950).
const utcTimeFirst, utcLimit = 1950, 2050

// NewCA returns a self-signed CA certificate (DER) for key, in the conformance layout.
// key must be a P-256 ECDSA or an Ed25519 key. With an *ecdsa.PrivateKey or an
// ed25519.PrivateKey the output is reproducible (RFC 6979 / Ed25519); other signers (an
// HSM, a KMS) give a valid but not byte-reproducible certificate.
func NewCA(key crypto.Signer, notBefore, notAfter time.Time) ([]byte, error) {
	if key == nil {
		return nil, errcode.New(errcode.InvalidKey, "no CA key")
	}
	alg, err := sigAlgForKey(key.Public())
	if err != nil {
		return nil, err
	}
	spki, bits, err := marshalSPKI(key.Public())
	if err != nil {
		return nil, err
	}
	if err := checkWindow(notBefore, notAfter); err != nil {
		return nil, err
	}
	name := nameDER(CACommonName)
	ski := sha256.Sum256(spki)
	var exts cryptobyte.Builder
	addExtension(&exts, oidSubjectKeyID, false, func(b *cryptobyte.Builder) {
		b.AddASN1OctetString(ski[:20])
	})
	addExtension(&exts, oidBasicConstraints, true, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1Boolean(true) })
	})
	return buildAndSign(key, alg, serialFor(bits), name, notBefore, notAfter, name, spki, exts)
}

// IssueWIC returns a Workload Identity Certificate (DER) for pub carrying id as its only
// URI SAN, issued under the CA certificate caDER whose private key is caKey. pub must be
// a P-256 ECDSA or Ed25519 public key. The signature algorithm follows the CA key.
func IssueWIC(caKey crypto.Signer, caDER []byte, pub crypto.PublicKey, id identifier.ID, notBefore, notAfter time.Time) ([]byte, error) {
	if caKey == nil {
		return nil, errcode.New(errcode.InvalidKey, "no CA key")
	}
	if id.IsZero() {
		return nil, errcode.New(errcode.InvalidRequest, "no workload identifier")
	}
	ca, err := parseCert(caDER)
	if err != nil {
		return nil, err
	}
	if !ca.BasicConstraintsValid || !ca.IsCA {
		return nil, errcode.New(errcode.InvalidRequest, "issuer certificate is not a CA")
	}
	if !publicKeysEqual(caKey.Public(), ca.PublicKey) {
		return nil, errcode.New(errcode.InvalidKey, "CA key does not match the CA certificate")
	}
	alg, err := sigAlgForKey(caKey.Public())
	if err != nil {
		return nil, err
	}
	spki, bits, err := marshalSPKI(pub)
	if err != nil {
		return nil, err
	}
	if err := checkWindow(notBefore, notAfter); err != nil {
		return nil, err
	}
	uri := id.String()
	var exts cryptobyte.Builder
	addExtension(&exts, oidSubjectAltName, false, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(tagURI, func(b *cryptobyte.Builder) { b.AddBytes([]byte(uri)) })
		})
	})
	addExtension(&exts, oidExtKeyUsage, false, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(oidKPClientAuth)
			b.AddASN1ObjectIdentifier(oidKPServerAuth)
		})
	})
	return buildAndSign(caKey, alg, serialFor(bits), ca.RawSubject, notBefore, notAfter, nameDER(WICCommonName), spki, exts)
}

func checkWindow(notBefore, notAfter time.Time) error {
	if !notAfter.After(notBefore) {
		return errcode.New(errcode.InvalidRequest, "notAfter %v is not after notBefore %v", notAfter, notBefore)
	}
	return nil
}

// serialFor follows rcgen: the first 20 octets of SHA-256 over the subject public key
// bits, top bit cleared so the INTEGER is positive and at most 20 octets (RFC 5280
// 4.1.2.2). Distinct keys get distinct serials without any serial state.
func serialFor(keyBits []byte) *big.Int {
	h := sha256.Sum256(keyBits)
	h[0] &= 0x7f
	return new(big.Int).SetBytes(h[:20])
}

func nameDER(cn string) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1ObjectIdentifier(oidCommonName)
				b.AddASN1(cbasn1.UTF8String, func(b *cryptobyte.Builder) { b.AddBytes([]byte(cn)) })
			})
		})
	})
	return b.BytesOrPanic()
}

func addExtension(b *cryptobyte.Builder, oid asn1.ObjectIdentifier, critical bool, value cryptobyte.BuilderContinuation) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1ObjectIdentifier(oid)
		if critical {
			// DER forbids encoding the DEFAULT FALSE, so only TRUE is ever written.
			b.AddASN1Boolean(true)
		}
		b.AddASN1(cbasn1.OCTET_STRING, value)
	})
}

func addTime(b *cryptobyte.Builder, t time.Time) {
	t = t.UTC().Truncate(time.Second)
	if y := t.Year(); y >= utcTimeFirst && y < utcLimit {
		b.AddASN1UTCTime(t)
		return
	}
	b.AddASN1GeneralizedTime(t)
}

func addAlgorithm(b *cryptobyte.Builder, alg x509.SignatureAlgorithm) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		if alg == x509.PureEd25519 {
			b.AddASN1ObjectIdentifier(oidSigEd25519)
		} else {
			b.AddASN1ObjectIdentifier(oidSigECDSAWithSHA256)
		}
	})
}

func buildAndSign(key crypto.Signer, alg x509.SignatureAlgorithm, serial *big.Int, issuer []byte,
	notBefore, notAfter time.Time, subject, spki []byte, exts cryptobyte.Builder) ([]byte, error) {
	extBytes, err := exts.Bytes()
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "extensions")
	}
	var tb cryptobyte.Builder
	tb.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(tagExplicitVersion, func(b *cryptobyte.Builder) { b.AddASN1Int64(2) })
		b.AddASN1BigInt(serial)
		addAlgorithm(b, alg)
		b.AddBytes(issuer)
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addTime(b, notBefore)
			addTime(b, notAfter)
		})
		b.AddBytes(subject)
		b.AddBytes(spki)
		b.AddASN1(tagExplicitExtensions, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddBytes(extBytes) })
		})
	})
	tbs, err := tb.Bytes()
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "TBSCertificate")
	}
	sig, err := signTBS(key, alg, tbs)
	if err != nil {
		return nil, err
	}
	var cb cryptobyte.Builder
	cb.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(tbs)
		addAlgorithm(b, alg)
		b.AddASN1BitString(sig)
	})
	der, err := cb.Bytes()
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "Certificate")
	}
	// Round-trip through crypto/x509 so a layout mistake surfaces here, at issuance,
	// rather than at a peer.
	if _, err := x509.ParseCertificate(der); err != nil {
		return nil, errcode.Wrap(errcode.CertificateParseError, err, "issued certificate does not parse")
	}
	return der, nil
}

// signTBS signs with the algorithm of the key. ECDSA gets a nil random source so that
// crypto/ecdsa signs deterministically (RFC 6979, Go 1.24+), which is what lets the
// vectors be reproduced; the signature is checked before use because a crypto.Signer
// backed by remote hardware is not otherwise trusted to have signed what was asked.
func signTBS(key crypto.Signer, alg x509.SignatureAlgorithm, tbs []byte) ([]byte, error) {
	var sig []byte
	var err error
	switch alg {
	case x509.ECDSAWithSHA256:
		digest := sha256.Sum256(tbs)
		if k, ok := key.(*ecdsa.PrivateKey); ok {
			sig, err = k.Sign(nil, digest[:], crypto.SHA256)
		} else {
			sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256)
		}
		if err == nil && !ecdsa.VerifyASN1(key.Public().(*ecdsa.PublicKey), digest[:], sig) {
			err = errcode.New(errcode.InvalidSignature, "CA signer produced a signature that does not verify")
		}
	case x509.PureEd25519:
		sig, err = key.Sign(rand.Reader, tbs, crypto.Hash(0))
		if err == nil && !ed25519.Verify(key.Public().(ed25519.PublicKey), tbs, sig) {
			err = errcode.New(errcode.InvalidSignature, "CA signer produced a signature that does not verify")
		}
	default:
		err = errcode.New(errcode.UnsupportedAlg, "no signature algorithm for %v", alg)
	}
	if err != nil {
		if errcode.CodeOf(err) == errcode.Unmapped {
			err = errcode.Wrap(errcode.InvalidKey, err, "CA signer")
		}
		return nil, err
	}
	return sig, nil
}

// marshalSPKI returns the SubjectPublicKeyInfo DER and the subjectPublicKey bits (the
// "raw public key" rcgen hashes into the serial).
func marshalSPKI(pub crypto.PublicKey) (spki, bits []byte, err error) {
	if _, err := sigAlgForKey(pub); err != nil {
		return nil, nil, err
	}
	spki, err = x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.InvalidKey, err, "public key")
	}
	s := cryptobyte.String(spki)
	var inner cryptobyte.String
	var bs asn1.BitString
	if !s.ReadASN1(&inner, cbasn1.SEQUENCE) || !inner.SkipASN1(cbasn1.SEQUENCE) ||
		!inner.ReadASN1BitString(&bs) || bs.BitLength%8 != 0 {
		return nil, nil, errcode.New(errcode.InvalidKey, "public key does not encode as a SubjectPublicKeyInfo")
	}
	return spki, bs.Bytes, nil
}

// sigAlgForKey is the single place that maps a key to the one signature algorithm it may
// make: issuance and verification both use it, so the certificate's own claim is never
// the source of the algorithm.
func sigAlgForKey(pub crypto.PublicKey) (x509.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return x509.ECDSAWithSHA256, nil
		}
		return x509.UnknownSignatureAlgorithm, errcode.New(errcode.UnsupportedAlg, "ECDSA key on %s (only P-256)", k.Curve.Params().Name)
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return x509.UnknownSignatureAlgorithm, errcode.New(errcode.InvalidKey, "Ed25519 key of %d octets", len(k))
		}
		return x509.PureEd25519, nil
	}
	return x509.UnknownSignatureAlgorithm, errcode.New(errcode.UnsupportedAlg, "key type %T (only P-256 ECDSA and Ed25519)", pub)
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if e, ok := a.(equaler); ok {
		return e.Equal(b)
	}
	return false
}
