package dialog_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
)

// FuzzResourceMetadataURL: a resource identifier either is refused or gives a metadata
// URL on its own origin whose path starts with the well-known suffix, that parses, and
// that can stand quoted in WWW-Authenticate.
func FuzzResourceMetadataURL(f *testing.F) {
	for _, s := range []string{"https://resource.example.com/resource1", "https://r.example", "https://r.example/?q=1",
		"http://127.0.0.1:80/a%2Fb", "https://r.example/a/../b", "https://[::1]/x", "https://r.example/a\"b", "https://u@r.example/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, resource string) {
		got, err := dialog.ResourceMetadataURL(resource)
		if err != nil {
			return
		}
		r, err1 := url.Parse(resource)
		u, err2 := url.Parse(got)
		if err1 != nil || err2 != nil || u.Scheme != r.Scheme || u.Host != r.Host || u.RawQuery != r.RawQuery ||
			!strings.HasPrefix(u.EscapedPath(), dialog.ResourceMetadataWellKnown) || strings.ContainsAny(got, "\"\\ #") {
			t.Fatalf("%q gave %q", resource, got)
		}
	})
}
