package httpbody

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/dialogtrust/dialogtrust/errcode"
)

func TestRead(t *testing.T) {
	broken := errors.New("connection reset")
	for name, tc := range map[string]struct {
		r    io.Reader
		want string
		code errcode.Code
	}{
		"nil":              {r: nil},
		"no body":          {r: http.NoBody},
		"empty":            {r: strings.NewReader("")},
		"exactly the max":  {r: strings.NewReader("12345678"), want: "12345678"},
		"one over the max": {r: strings.NewReader("123456789"), code: errcode.BodyTooLarge},
		"breaks off":       {r: io.MultiReader(strings.NewReader("1234"), iotest.ErrReader(broken)), code: errcode.InvalidRequest},
		"max bytes reader": {r: http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader("123456789")), 4), code: errcode.BodyTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Read(tc.r, 8, "request body")
			if tc.code != "" {
				if errcode.CodeOf(err) != tc.code || b != nil {
					t.Fatalf("Read = %q, %v; want code %s", b, err, tc.code)
				}
				if tc.code == errcode.InvalidRequest && !errors.Is(err, broken) {
					t.Fatalf("the cause is lost: %v", err)
				}
				return
			}
			if err != nil || string(b) != tc.want {
				t.Fatalf("Read = %q, %v; want %q", b, err, tc.want)
			}
		})
	}
}

// TestReadAsksForNoMoreThanMaxPlusOne: a peer's endless body costs max+1 octets.
func TestReadAsksForNoMoreThanMaxPlusOne(t *testing.T) {
	c := &countingReader{}
	if _, err := Read(c, 1000, "body"); errcode.CodeOf(err) != errcode.BodyTooLarge {
		t.Fatalf("err = %v", err)
	}
	if c.n != 1001 {
		t.Fatalf("read %d octets of an endless body; want 1001", c.n)
	}
}

type countingReader struct{ n int }

func (c *countingReader) Read(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}
