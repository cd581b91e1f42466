package proxy

import (
	"net/http"
	"slices"
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

// fieldNames is a list of field names with the fieldKey of each, made once.
type fieldNames struct{ names, keys []string }

func newFieldNames(names ...string) fieldNames {
	f := fieldNames{names: names, keys: make([]string, len(names))}
	for i, n := range names {
		f.keys[i] = fieldKey(n)
	}
	return f
}

// find returns the name of f that an application reads name as, or "".
func (f fieldNames) find(name string) string {
	if i := slices.Index(f.keys, fieldKey(name)); i >= 0 {
		return f.names[i]
	}
	return ""
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
var ingressOwnedFields = newFieldNames("X-Forwarded-Host")

// receiverFields are the fields the ingress's receiver reads (the credentials, the
// dialog, the digest it checks) or the ingress removes: the receiver reads only
// their own spelling, so a copy in another spelling is removed before it runs, and
// never reaches the application beside the one that was checked.
var receiverFields = newFieldNames(wit.HeaderName, txntoken.HeaderName, dialog.HeaderName, dialog.ProvenanceHeader,
	"Signature", "Signature-Input", "Content-Digest", wpt.LegacyHeader, "Authorization")

// egressInstructionFields are the fields the egress reads from the local agent as
// instructions. One in another spelling is refused (checkAgentFieldNames): the
// egress cannot tell what the agent meant, and going on without it would send a
// request other than the one asked for (outside the dialog the agent named, or
// without the handoff it asked for).
var egressInstructionFields = newFieldNames(dialog.HeaderName, StartDialogField, HandoffField, HandoffTaskField,
	HandoffCancelField, ProvenanceField)

// credentialNames are credentialFields (the egress's own) with their keys.
var credentialNames = newFieldNames(credentialFields...)

// removeSpellings removes every field of h that an application reads as one of
// names but that is not spelt as net/http spells that name (its canonical form):
// those stay for the caller to read or remove.
func removeSpellings(h http.Header, names fieldNames) {
	for k := range h {
		if n := names.find(k); n != "" && k != n {
			delete(h, k)
		}
	}
}

// removeAnySpelling removes every field of h that an application reads as one of
// names, in whatever spelling.
func removeAnySpelling(h http.Header, names fieldNames) {
	for k := range h {
		if names.find(k) != "" {
			delete(h, k)
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
		if name := egressInstructionFields.find(k); name != "" && k != name {
			return errcode.New(errcode.InvalidRequest, "the field %q is read as %s by applications that take \"_\" for \"-\": send it as %s", errcode.Cut(k), name, name)
		}
	}
	return nil
}
