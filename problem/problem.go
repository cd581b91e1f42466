package problem

import (
	"encoding/json"
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// TypeBase prefixes the code to form the problem "type" URI.
const TypeBase = "urn:dialogtrust:error:"

// MaxDetail bounds the detail of a problem document, in octets.
const MaxDetail = 1024

// Details is the problem document.
type Details struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	// Kind is "failed" or "could_not_complete" (dialog-binding section 12).
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	// RefusedBy, an extension member, names the side that refused when a proxy passes
	// a refusal on: "egress" for the egress proxy's own, "upstream" for the upstream's
	// (docs/errors.md, "How a refusal is sent").
	RefusedBy string `json:"refused_by,omitempty"`
}

// Status maps an error to its HTTP status.
func Status(err error) int {
	if errcode.KindOf(err) == errcode.Incomplete {
		return http.StatusServiceUnavailable
	}
	switch errcode.CodeOf(err) {
	case errcode.InvalidRequest, errcode.BodyTooLarge, errcode.DuplicateField, errcode.HandoffUnplaced, errcode.MCPHeaderMismatch:
		if errcode.CodeOf(err) == errcode.BodyTooLarge {
			return http.StatusRequestEntityTooLarge
		}
		return http.StatusBadRequest
	case errcode.SubjectNotAllowed, errcode.AlgNotAllowed, errcode.LifetimeTooLong,
		errcode.DialogMismatch, errcode.InitiatorMismatch, errcode.SessionOwnerMismatch:
		return http.StatusForbidden
	case errcode.HandoffPolicy, errcode.HandoffGrantMismatch, errcode.HandoffSenderNotIssuer, errcode.CrossesTrustBoundary,
		errcode.SubjectNotMapped:
		return http.StatusForbidden
	case errcode.DialogInUse, errcode.HandoffEquivocation, errcode.HandoffUnresolvedWork,
		errcode.HandoffInvalidTransition:
		return http.StatusConflict
	case errcode.ResponseNotSignable:
		return http.StatusNotImplemented
	case errcode.TooManyDialogs:
		return http.StatusTooManyRequests
	case errcode.InvalidDialogContext:
		return http.StatusBadRequest
	case errcode.NoRoute:
		return http.StatusNotFound
	case errcode.HostNotAllowed:
		return http.StatusMisdirectedRequest
	case errcode.OriginNotAllowed, errcode.NotAuthorized, errcode.CSRFTokenInvalid,
		errcode.DialogRevoked, errcode.WorkloadRevoked, errcode.TxnRevoked:
		return http.StatusForbidden
	case errcode.Internal, errcode.Unmapped:
		return http.StatusInternalServerError
	}
	return http.StatusUnauthorized
}

// From builds the problem document for err.
func From(err error) Details {
	status := Status(err)
	code := errcode.CodeOf(err)
	d := Details{Type: TypeBase + string(code), Title: http.StatusText(status), Status: status, Code: string(code), Kind: errcode.KindOf(err).String()}
	var e *errcode.Error
	if errors.As(err, &e) && status != http.StatusInternalServerError {
		d.Detail = e.Detail
		// Details quote sender-chosen strings through errcode.Cut; this bounds the whole
		// in case one does not.
		if len(d.Detail) > MaxDetail {
			i := MaxDetail
			for i > 0 && !utf8.RuneStart(d.Detail[i]) {
				i--
			}
			d.Detail = d.Detail[:i] + "..."
		}
	}
	return d
}

// Write sends err as application/problem+json.
func Write(w http.ResponseWriter, err error) { WriteDetails(w, From(err)) }

// WriteDetails sends d as application/problem+json with status d.Status.
func WriteDetails(w http.ResponseWriter, d Details) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(d.Status)
	_ = json.NewEncoder(w).Encode(d)
}

// Read decodes a problem document from a response body (clients use it to recover the
// code). It returns an *errcode.Error carrying the remote code and kind. It also reads
// the refusal of a JSON-RPC request (package dialog answers MCP and A2A requests it
// refuses at the handoff step with a JSON-RPC error response, on 200): the error's data
// carries the document's type, code, kind and detail.
func Read(status int, body []byte) error {
	var d Details
	if err := netjson.DecodeObject(body, &d); err != nil || d.Code == "" {
		var rpc struct {
			Error *struct {
				Data *Details `json:"data"`
			} `json:"error"`
		}
		if netjson.DecodeObject(body, &rpc) != nil || rpc.Error == nil || rpc.Error.Data == nil || rpc.Error.Data.Code == "" {
			return errcode.New(errcode.Unmapped, "HTTP %d without a problem document", status)
		}
		d = *rpc.Error.Data
	}
	kind := errcode.Failed
	if d.Kind == errcode.Incomplete.String() {
		kind = errcode.Incomplete
	}
	return &errcode.Error{Code: errcode.Code(d.Code), Kind: kind, Detail: "remote: " + d.Detail}
}
