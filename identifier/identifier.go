package identifier

import (
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

const (
	// MaxLength is the longest identifier accepted (identifier-03 section 4.1: 2048 octets).
	MaxLength = 2048
	// MaxTrustDomainLength bounds the authority (the DNS limit SPIFFE also uses).
	MaxTrustDomainLength = 255

	SchemeSPIFFE = "spiffe"
	SchemeWIMSE  = "wimse"
)

// ID is a validated workload identifier in canonical form. The zero ID is invalid.
type ID struct {
	scheme, trustDomain, path string
}

// Parse validates s and returns it as an ID. Every rejection is an *errcode.Error.
func Parse(s string) (ID, error) {
	if len(s) > MaxLength {
		return ID{}, errcode.New(errcode.IdentifierTooLong, "identifier is %d octets, limit %d", len(s), MaxLength)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != SchemeSPIFFE && scheme != SchemeWIMSE) {
		return ID{}, errcode.New(errcode.UnsupportedScheme, "scheme must be spiffe:// or wimse:// in lower case")
	}
	// Query and fragment are forbidden outright (section 4.1), so look for them before
	// anything else can misread them as part of the path.
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		return ID{}, errcode.New(errcode.HasFragment, "identifier has a fragment")
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		return ID{}, errcode.New(errcode.HasQuery, "identifier has a query")
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if err := checkTrustDomain(authority); err != nil {
		return ID{}, err
	}
	if err := checkPath(scheme, path); err != nil {
		return ID{}, err
	}
	if scheme == SchemeSPIFFE {
		// go-spiffe is the reference for SPIFFE IDs; by now it should agree.
		if _, err := spiffeid.FromString(s); err != nil {
			return ID{}, errcode.Wrap(errcode.InvalidPathChar, err, "not a SPIFFE ID")
		}
	}
	return ID{scheme: scheme, trustDomain: authority, path: path}, nil
}

// MustParse is Parse for constants in tests and examples; it panics on error.
func MustParse(s string) ID {
	id, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return id
}

func checkTrustDomain(td string) error {
	if strings.IndexByte(td, '@') >= 0 {
		return errcode.New(errcode.HasUserInfo, "identifier has user information")
	}
	if strings.IndexByte(td, ':') >= 0 {
		return errcode.New(errcode.HasPort, "identifier has a port")
	}
	if td == "" {
		return errcode.New(errcode.EmptyTrustDomain, "trust domain is empty")
	}
	if len(td) > MaxTrustDomainLength {
		return errcode.New(errcode.TrustDomainTooLong, "trust domain is %d octets, limit %d", len(td), MaxTrustDomainLength)
	}
	for i := 0; i < len(td); i++ {
		c := td[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return errcode.New(errcode.InvalidTrustDomainChar, "trust domain character %q at %d (only a-z 0-9 . - _)", c, i)
		}
	}
	if td[len(td)-1] == '.' || td[0] == '.' {
		return errcode.New(errcode.InvalidTrustDomainChar, "trust domain must not start or end with a dot")
	}
	return nil
}

func checkPath(scheme, path string) error {
	if path == "" {
		if scheme == SchemeWIMSE {
			// A bare wimse://td is an origin (section 4.6), not a workload identifier.
			return errcode.New(errcode.EmptyPathSegment, "a wimse identifier needs at least one path segment")
		}
		return nil
	}
	for _, seg := range strings.Split(path[1:], "/") {
		if seg == "" {
			return errcode.New(errcode.EmptyPathSegment, "empty path segment (// or a trailing /)")
		}
		if seg == "." || seg == ".." {
			return errcode.New(errcode.DotSegment, "dot segment %q", seg)
		}
		if err := checkSegment(scheme, seg); err != nil {
			return err
		}
	}
	return nil
}

func checkSegment(scheme, seg string) error {
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if scheme == SchemeSPIFFE {
			if !isSPIFFEPathChar(c) {
				return errcode.New(errcode.InvalidPathChar, "character %q is outside the SPIFFE path set", c)
			}
			continue
		}
		if c == '%' {
			if i+2 >= len(seg) || !isHex(seg[i+1]) || !isHex(seg[i+2]) {
				return errcode.New(errcode.BadPercentEncoding, "'%%' must be followed by two hex digits")
			}
			if isLowerHex(seg[i+1]) || isLowerHex(seg[i+2]) {
				return errcode.New(errcode.NonNormalizedPercentEncoding, "percent-escape with lower-case hex")
			}
			if isUnreserved(unhex(seg[i+1])<<4 | unhex(seg[i+2])) {
				return errcode.New(errcode.NonNormalizedPercentEncoding, "percent-escape of an unreserved character")
			}
			i += 2
			continue
		}
		if !isUnreserved(c) && !isSubDelim(c) && c != ':' && c != '@' {
			return errcode.New(errcode.InvalidPathChar, "character %q is outside the path set", c)
		}
	}
	return nil
}

func isSPIFFEPathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool { return strings.IndexByte("!$&'()*+,;=", c) >= 0 }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isLowerHex(c byte) bool { return c >= 'a' && c <= 'f' }

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// String returns the identifier exactly as parsed (which is its canonical form).
func (id ID) String() string {
	if id.scheme == "" {
		return ""
	}
	return id.scheme + "://" + id.trustDomain + id.path
}

// Scheme is "spiffe" or "wimse".
func (id ID) Scheme() string { return id.scheme }

// TrustDomain is the authority of the identifier.
func (id ID) TrustDomain() string { return id.trustDomain }

// Path is the path with its leading "/", or "" for a bare SPIFFE trust domain.
func (id ID) Path() string { return id.path }

// Origin is scheme://trust-domain (identifier-03 section 4.6): a hint, not an identifier.
func (id ID) Origin() string { return id.scheme + "://" + id.trustDomain }

// IsZero reports whether id is the zero (invalid) ID.
func (id ID) IsZero() bool { return id.scheme == "" }

// Equal compares whole URIs (ID-5); never the path alone.
func (id ID) Equal(other ID) bool { return id == other }

// MemberOf reports whether id lies in the trust domain td (exact, case-sensitive).
func (id ID) MemberOf(td string) bool { return id.trustDomain == td }

// MarshalText implements encoding.TextMarshaler.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with full validation.
func (id *ID) UnmarshalText(b []byte) error {
	parsed, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}
