package proxy

import (
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// boundBody bounds the body of a request the ingress received, without reading it: a
// Content-Length over MaxBody is refused at once (from the field alone), and any body
// is wrapped so that whoever reads it later (the receiver, once every field check
// passed, or forward) meets body_too_large past MaxBody, never a silent truncation.
// http.MaxBytesReader also has the server close the connection after the refusal, as
// the rest of an oversized body is not read. A non-nil error refuses the request.
func boundBody(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > MaxBody {
		return errcode.New(errcode.BodyTooLarge, "the request body is %d octets, over %d", r.ContentLength, MaxBody)
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	}
	return nil
}
