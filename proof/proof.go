package proof

import (
	"fmt"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Method is how a request proves possession of the key its WIT names. The zero value
// is HTTPSig, the default everywhere.
type Method int

const (
	// HTTPSig is the WIMSE HTTP signature (http-signature-07): it covers method, path,
	// query, body digest and the credential fields, and lets the server sign its
	// response. The default.
	HTTPSig Method = iota
	// WPT is the Workload Proof Token (wpt-02) with wth, tth, oth and dth.
	WPT
)

// String is the method's name in configuration, logs and dialog.Verified: "httpsig" or
// "wpt".
func (m Method) String() string {
	switch m {
	case HTTPSig:
		return "httpsig"
	case WPT:
		return "wpt"
	}
	return fmt.Sprintf("proof.Method(%d)", int(m))
}

// Parse reads a method's name; the empty string is the default, HTTPSig.
func Parse(s string) (Method, error) {
	switch s {
	case "", "httpsig":
		return HTTPSig, nil
	case "wpt":
		return WPT, nil
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return 0, errcode.New(errcode.InvalidRequest, "unknown proof method %q (httpsig or wpt)", s)
}

// MarshalText writes the method's name.
func (m Method) MarshalText() ([]byte, error) {
	if m != HTTPSig && m != WPT {
		return nil, errcode.New(errcode.InvalidRequest, "unknown proof method %d", int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads a method's name (see Parse).
func (m *Method) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
