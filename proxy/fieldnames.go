package proxy

import (
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// Field names as applications read them (issue 22 point 1). CGI (RFC 3875 section
// 4.1.18), WSGI (PEP 3333), Django (META, under WSGI and ASGI alike), PHP, Rack and
// many application servers hand a request field to the application as HTTP_ and its
// name upper-cased with "-" turned into "_": Dialogtrust_Verified_Sender and
// Dialogtrust-Verified-Sender are one variable there, and wsgiref joins their values
// with a comma. net/http, like HTTP itself, keeps them apart. So a field the proxy
// removes or sets must be removed in every spelling such an application reads as the
// same name, or a client, or anyone between the proxies, would forge it under a
// spelling the proxy does not look at. Older servers (Apache httpd before 2.4) turned
// every octet other than a letter or a digit into "_"; fieldKey reads names that way,
// which includes the CGI reading.

// fieldKey is name as the most permissive of those applications reads it: ASCII
// upper case, every octet other than a letter or a digit as "_".
func fieldKey(name string) string {
	b := make([]byte, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			c = '_'
		}
		b[i] = c
	}
	return string(b)
}

// prefixKey is FieldPrefix's fieldKey: every name with it is in the proxies'
// namespace, however spelt.
var prefixKey = fieldKey(FieldPrefix)

// inNamespace reports whether an application reads name as one of the proxies'
// fields (FieldPrefix), in any spelling.
func inNamespace(name string) bool {
	return strings.HasPrefix(fieldKey(name), prefixKey)
}

// ingressOwnedFields are the fields the ingress sets for the application outside its
// namespace: a client's copy, in any spelling, is removed before anything else and
// the ingress's own is the only one the application sees. The Verified* fields are
// in the namespace (inNamespace).
var ingressOwnedFields = []string{"X-Forwarded-Host"}

// receiverFields are the fields the ingress's receiver reads (the credentials, the
// dialog, the digest it checks) or the ingress removes: the receiver reads only
// their own spelling, so a copy in another spelling is removed before it runs, and
// never reaches the application beside the one that was checked.
var receiverFields = []string{wit.HeaderName, txntoken.HeaderName, dialog.HeaderName, dialog.ProvenanceHeader,
	"Signature", "Signature-Input", "Content-Digest", wpt.LegacyHeader, "Authorization"}

// egressInstructionFields are the fields the egress reads from the local agent as
// instructions. One in another spelling is refused (checkAgentFieldNames): the
// egress cannot tell what the agent meant, and going on without it would send a
// request other than the one asked for (outside the dialog the agent named, or
// without the handoff it asked for).
var egressInstructionFields = []string{dialog.HeaderName, StartDialogField, HandoffField, HandoffTaskField,
	HandoffCancelField, ProvenanceField}

// removeSpellings removes every field of h that an application reads as one of
// names but that is not spelt as net/http spells that name (its canonical form):
// those stay for the caller to read or remove.
func removeSpellings(h http.Header, names []string) {
	for k := range h {
		key := fieldKey(k)
		for _, name := range names {
			if key == fieldKey(name) && k != name {
				delete(h, k)
				break
			}
		}
	}
}

// removeAnySpelling removes every field of h that an application reads as one of
// names, in whatever spelling.
func removeAnySpelling(h http.Header, names []string) {
	for k := range h {
		key := fieldKey(k)
		for _, name := range names {
			if key == fieldKey(name) {
				delete(h, k)
				break
			}
		}
	}
}

// cleanIngressRequest removes from a request at the ingress every field an
// application would read as one the ingress sets or its receiver checks, unless it
// is the one the receiver reads: the proxies' namespace and the ingress's own fields
// in any spelling, the receiver's fields in any spelling but theirs. Trailers are
// never forwarded (forward builds a request without them).
func cleanIngressRequest(h http.Header) {
	removePrefixed(h)
	removeAnySpelling(h, ingressOwnedFields)
	removeSpellings(h, receiverFields)
}

// checkAgentFieldNames refuses a request of the local agent that carries an
// instruction field of the egress in a spelling other than its own.
func checkAgentFieldNames(h http.Header) error {
	for k := range h {
		key := fieldKey(k)
		for _, name := range egressInstructionFields {
			if key == fieldKey(name) && k != name {
				return errcode.New(errcode.InvalidRequest, "the field %q is read as %s by applications that take \"_\" for \"-\": send it as %s", errcode.Cut(k), name, name)
			}
		}
	}
	return nil
}
