package proxy

import (
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
)

// ingressMetadata is the receiver's protected resource metadata (RFC 9728,
// dialog.WithResourceMetadata), which the ingress serves itself at its well-known
// path: it is public (asked for before a client holds a credential), so it is answered
// before any check, and never by the application.
type ingressMetadata struct {
	path    string
	handler http.Handler
}

// metadataOf is rc's metadata, nil when it publishes none.
func metadataOf(rc *dialog.Receiver) *ingressMetadata {
	path, h := rc.ResourceMetadataHandler()
	if h == nil {
		return nil
	}
	return &ingressMetadata{path: path, handler: h}
}

// serveMetadata answers a request under the well-known prefix of protected resource
// metadata when the ingress publishes metadata, and reports whether it did: its own
// document at its path (GET and HEAD; the handler refuses other methods), and no_route
// (404) for any other path under the prefix, which is never forwarded, so that the
// application cannot publish other metadata for a resource behind this ingress.
func (in *Ingress) serveMetadata(w http.ResponseWriter, r *http.Request) bool {
	if in.metadata == nil {
		return false
	}
	p := r.URL.Path
	if p != dialog.ResourceMetadataWellKnown && !strings.HasPrefix(p, dialog.ResourceMetadataWellKnown+"/") {
		return false
	}
	if r.URL.EscapedPath() == in.metadata.path {
		in.metadata.handler.ServeHTTP(w, r)
		return true
	}
	in.refuse(w, r, errcode.New(errcode.NoRoute, "the only protected resource metadata here is at %s", in.metadata.path))
	return true
}
