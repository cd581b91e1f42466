package hostproto

import (
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/handoff"
)

// A2A's service parameters (HTTP header fields) for the handoff extension.

// A2AExtensionsHeader is the A2A service parameter (HTTP header) in which a client
// lists the extensions it uses (A2A 1.0).
const A2AExtensionsHeader = "A2A-Extensions"

// A2A03ExtensionsHeader is the name A2A 0.3 gives the same service parameter; a2a-go
// 0.3 reads only this one.
const A2A03ExtensionsHeader = "X-A2A-Extensions"

// A2AVersionHeader is the A2A 1.0 service parameter naming the protocol version of a
// request; a server reads its absence as 0.3.
const A2AVersionHeader = "A2A-Version"

// AddA2AExtension lists the extension URI (handoff.A2AExtensionURI) in the
// A2A-Extensions service parameter of a request (section 6: "A client also lists the
// URI"), once.
func AddA2AExtension(h http.Header) { addExtensionHeader(h, A2AExtensionsHeader) }

// AddA2A03Extension lists the extension URI under both names, A2A-Extensions and
// X-A2A-Extensions, once each: an A2A 0.3 server reads the second, a 1.0 one the first.
func AddA2A03Extension(h http.Header) {
	addExtensionHeader(h, A2AExtensionsHeader)
	addExtensionHeader(h, A2A03ExtensionsHeader)
}

// ListExtension lists the extension URI in the service parameter of a request of host
// that carries an offer or a cancel: under both names for A2A 0.3 (AddA2A03Extension),
// in A2A-Extensions for A2A 1.0; MCP has no such parameter.
func ListExtension(host Host, h http.Header) {
	switch host {
	case A2A03:
		AddA2A03Extension(h)
	case A2A10:
		AddA2AExtension(h)
	}
}

func addExtensionHeader(h http.Header, name string) {
	for _, v := range h.Values(name) {
		for _, u := range strings.Split(v, ",") {
			if strings.TrimSpace(u) == handoff.A2AExtensionURI {
				return
			}
		}
	}
	h.Add(name, handoff.A2AExtensionURI)
}
