package proxy

import (
	"bytes"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// FieldPrefix starts every field the proxies define. The ingress removes every field
// with this prefix that a client sent, before anything else, so that the application
// can trust each one it sees; the egress removes them before signing, so that none
// travels to the upstream. Both read the prefix as applications do, "_" for "-" and
// without case (fieldnames.go).
const FieldPrefix = "Dialogtrust-"

// Fields the egress reads from the local agent.
const (
	// StartDialogField: "?1" (a structured-field boolean) asks the egress to start a
	// new dialog with the workload as initiator (section 5); the response carries the
	// accepted Dialog-Context. It excludes a Dialog-Context field in the same request.
	StartDialogField = "Dialogtrust-Start-Dialog"
	// HandoffField: "?1" (a structured-field boolean) asks the egress to make a signed
	// handoff offer for this request (handoff-context sections 2, 3) to the route's
	// delegate, in the request's dialog, and to put it in the JSON-RPC body where the
	// route's host protocol carries it (section 6); "?0" or absent: no offer.
	HandoffField = "Dialogtrust-Handoff"
	// HandoffTaskField: the offer's task member (section 2: a task identifier from
	// the host protocol), at most MaxHandoffTask octets of printable ASCII.
	HandoffTaskField = "Dialogtrust-Handoff-Task"
	// HandoffCancelField: the hop identifier (HandoffHopField's value) of an offer this
	// egress made on the route, whose handoff the agent cancels with this request: the
	// host protocol's cancel (MCP notifications/cancelled naming the offer's request in
	// params.requestId, A2A 0.3 tasks/cancel, A2A 1.0 CancelTask), sent in the offer's
	// dialog. The egress signs the delegator's "canceled" status for the hop (section
	// 4) and places it where section 6 carries it. It excludes HandoffField: "?1".
	HandoffCancelField = "Dialogtrust-Handoff-Cancel"
	// ProvenanceField forwards provenance (dialog-binding section 9) when the agent
	// calls on in a dialog it received: the value of VerifiedProvenanceField as the
	// ingress gave it, sent with that request's Dialog-Context. The egress checks that
	// it was made in that dialog (dialog.Provenance.CheckContext) and sends it as
	// Dialog-Provenance, covered by the proof; without a Dialog-Context, or on a route
	// crossing a trust boundary, it is refused.
	ProvenanceField = "Dialogtrust-Provenance"
)

// Fields of the handoff statuses. The egress sets them on the response to an offer it
// made, from the delegate's status it verified in the reply; the application behind
// the ingress sets HandoffStatusField and HandoffReasonField on its response to an
// accepted offer, and the ingress signs that status and removes the fields.
const (
	// HandoffStatusField: the hop's state, "accepted", "rejected", "completed",
	// "failed" or "canceled" (section 4). From the application: "completed", "failed"
	// or "accepted".
	HandoffStatusField = "Dialogtrust-Handoff-Status"
	// HandoffReasonField: the reason of a "rejected" or "failed" status (one of section
	// 2's values), or else its detail; at most MaxHandoffReason octets, and an octet
	// outside printable ASCII, or "%", percent-encoded (UTF-8).
	HandoffReasonField = "Dialogtrust-Handoff-Reason"
	// HandoffHopField: the hop identifier of the offer the egress made, or of the hop
	// the request canceled (HandoffCancelField).
	HandoffHopField = "Dialogtrust-Handoff-Hop"
)

// Bounds of the handoff fields.
const (
	MaxHandoffTask   = 256
	MaxHandoffReason = 256
)

// Fields the ingress sets on the request it forwards to the application: what the
// receiver verified (section 12). Each is absent when there is nothing verified to
// say (no dialog, no Txn-Token, no handoff).
const (
	// VerifiedSenderField: the workload identifier whose WIT and proof verified.
	VerifiedSenderField = "Dialogtrust-Verified-Sender"
	// VerifiedProofField: how the sender proved possession: "httpsig" or "wpt".
	VerifiedProofField = "Dialogtrust-Verified-Proof"
	// VerifiedDialogField: the dialog identifier (dlg) of the verified Dialog-Context.
	VerifiedDialogField = "Dialogtrust-Verified-Dialog"
	// VerifiedInitiatorField: the dialog's initiator named in Dialog-Context.
	VerifiedInitiatorField = "Dialogtrust-Verified-Initiator"
	// VerifiedInitiatorProvedField: "true" when the initiator was proved (the sender is
	// the initiator, or provenance leads back to it), else "false".
	VerifiedInitiatorProvedField = "Dialogtrust-Verified-Initiator-Proved"
	// VerifiedEstablishedField: "true" when this request established the dialog at a
	// stateful ingress.
	VerifiedEstablishedField = "Dialogtrust-Verified-Established"
	// VerifiedTxnTokenClaimsField: the validated Txn-Token's claims as one line of JSON
	// (non-ASCII escaped).
	VerifiedTxnTokenClaimsField = "Dialogtrust-Verified-Txn-Token-Claims"
	// VerifiedHandoffField: the outcome of a handoff that travelled with the request
	// ("accepted"); a refused offer never reaches the application.
	VerifiedHandoffField = "Dialogtrust-Verified-Handoff"
	// VerifiedHandoffHopField: the hop identifier of the accepted offer.
	VerifiedHandoffHopField = "Dialogtrust-Verified-Handoff-Hop"
	// VerifiedHandoffFromField: the accepted offer's iss, the delegator; with
	// VerifiedHandoffCancelField, the delegator that canceled the hop.
	VerifiedHandoffFromField = "Dialogtrust-Verified-Handoff-From"
	// VerifiedHandoffCancelField: the hop identifier of a handoff the delegator
	// canceled with this request (its "canceled" status in the host protocol's cancel,
	// section 6), checked and recorded by the handoff receiver (section 4: the hop is
	// canceled at the delegate); a cancel that does not verify never reaches the
	// application. The host protocol's cancel in the body asks the work to stop.
	VerifiedHandoffCancelField = "Dialogtrust-Verified-Handoff-Cancel"
	// VerifiedProvenanceField: the provenance the application forwards in
	// ProvenanceField when it calls on in this dialog (section 9): the records received
	// and the sender's own (dialog.Verified.Forward), a Dialog-Provenance value. It
	// holds what the earlier hops signed, their WITs and Txn-Tokens included: to be
	// passed on, not logged. Absent without a Dialog-Context, with a WPT (which leaves
	// no signature base to record), when the sender's signature covered Authorization
	// (its credential would travel on), or when the chain is full
	// (dialog.MaxProvenanceRecords, dialog.MaxProvenanceSize).
	VerifiedProvenanceField = "Dialogtrust-Verified-Provenance"
)

// MaxBody bounds a request body, and a response body the proxies read whole (the bound of
// agent.Transport and of a response the receiver signs).
const MaxBody = dialog.MaxSignedResponseBody

// hopByHop are the fields of one connection (RFC 9110 section 7.6.1), never forwarded.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// credentialFields are the fields the egress makes itself: a copy from the agent is
// dropped, never signed over or sent.
var credentialFields = []string{wit.HeaderName, txntoken.HeaderName, dialog.HeaderName, dialog.ProvenanceHeader,
	"Signature", "Signature-Input", "Content-Digest", wpt.LegacyHeader}

// removeHopByHop removes the connection's own fields, including those Connection names.
func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// removePrefixed removes every field whose name starts with FieldPrefix, in any
// spelling an application reads as such (fieldKey: Dialogtrust_Verified_Sender too).
func removePrefixed(h http.Header) {
	for name := range h {
		if inNamespace(name) {
			delete(h, name)
		}
	}
}

// writeResponse sends res, whose body is already read, to w: its fields but the
// connection's own (removeHopByHop's) and Content-Length, which is set for body.
func writeResponse(w http.ResponseWriter, res *http.Response, body []byte) {
	copyResponseHeader(w, res)
	if res.Request == nil || res.Request.Method != http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(body)
}

// copyResponseHeader puts res's fields on w's but the connection's own
// (removeHopByHop's) and Content-Length, which the caller sets.
func copyResponseHeader(w http.ResponseWriter, res *http.Response) {
	var named []string // the fields Connection names, canonical
	for _, v := range res.Header.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				named = append(named, textproto.CanonicalMIMEHeaderKey(name))
			}
		}
	}
	out := w.Header()
	for k, v := range res.Header {
		if k == "Content-Length" || slices.Contains(hopByHop, k) || slices.Contains(named, k) {
			continue
		}
		out[k] = v
	}
}

// asciiJSON escapes every non-ASCII octet of a JSON text as \u, so that it is a
// field value any HTTP stack passes unchanged.
func asciiJSON(b []byte) string {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r >= 0x80 }) {
		return string(b)
	}
	var sb strings.Builder
	for _, r := range string(b) {
		switch {
		case r < 0x80:
			sb.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			sb.WriteString(`\u` + hex4(0xD800+(r>>10)) + `\u` + hex4(0xDC00+(r&0x3FF)))
		default:
			sb.WriteString(`\u` + hex4(r))
		}
	}
	return sb.String()
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}
