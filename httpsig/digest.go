package httpsig

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dunglas/httpsfv"
	"github.com/yaronf/httpsign"
)

// maxDigestFieldSize bounds Content-Digest: a sha-512 member is under 100 octets.
const maxDigestFieldSize = 1024

// digestSchemes are the RFC 9530 algorithms a received Content-Digest may use. A sender
// of this package always writes sha-256 (the profile's examples); sha-512 is accepted
// because RFC 9530 allows it and it is no weaker.
var digestSchemes = []string{httpsign.DigestSha256, httpsign.DigestSha512}

// contentDigest returns the Content-Digest value (sha-256) of body.
func contentDigest(body []byte) (string, error) {
	rc := io.NopCloser(bytes.NewReader(body))
	d, err := httpsign.GenerateContentDigestHeader(&rc, []string{httpsign.DigestSha256})
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidRequest, err, "computing Content-Digest")
	}
	return d, nil
}

// readBody reads a received body, at most max octets, and returns it with a fresh reader
// over the same octets for the handler. A nil or http.NoBody body is no content.
func readBody(body io.ReadCloser, contentLength, max int64) ([]byte, io.ReadCloser, error) {
	if body == nil || body == http.NoBody {
		return nil, body, nil
	}
	if contentLength > max {
		return nil, body, errcode.New(errcode.BodyTooLarge, "body is %d octets, limit %d", contentLength, max)
	}
	// MaxBytesReader rather than LimitReader: it reports the overrun as an error instead
	// of silently truncating, so a digest is never checked over part of a body.
	b, err := readAll(http.MaxBytesReader(nil, body, max), contentLength)
	_ = body.Close()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, http.NoBody, errcode.New(errcode.BodyTooLarge, "body is longer than %d octets", max)
		}
		return nil, http.NoBody, errcode.Unavailable(errcode.InvalidRequest, err, "the body could not be read")
	}
	return b, io.NopCloser(bytes.NewReader(b)), nil
}

// readAll is io.ReadAll starting from the announced length, so that a body of known
// size is read into one allocation. The announcement is not trusted beyond 64 KiB:
// memory beyond that is spent only on octets that actually arrive.
func readAll(r io.Reader, contentLength int64) ([]byte, error) {
	size := 512
	if contentLength >= 0 {
		size = int(min(contentLength, 64<<10)) + 1 // +1 to see EOF without growing
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// checkContentDigest is SIG-4: when the message has content or carries Content-Digest,
// the digest is recomputed over the octets received and compared. Content without
// Content-Digest is missing_component (http-signature-07 section 3: the sender MUST send
// it). Every sha-256 and sha-512 member present must match, and at least one must be.
func checkContentDigest(h http.Header, body []byte) error {
	vals := h.Values(headerContentDigest)
	if len(vals) == 0 {
		if len(body) > 0 {
			return errcode.New(errcode.MissingComponent, "the message has content but no Content-Digest")
		}
		return nil
	}
	if err := checkSize(headerContentDigest, vals, maxDigestFieldSize); err != nil {
		return err
	}
	rc := io.NopCloser(bytes.NewReader(body))
	err := httpsign.ValidateContentDigestHeader(vals, &rc, digestSchemes)
	if err == nil {
		return nil
	}
	// httpsign's errors are plain strings: the field is parsed again only to tell a
	// malformed field (parse_error) from a wrong or unusable digest (a mismatch).
	d, perr := httpsfv.UnmarshalDictionary(vals)
	if perr != nil {
		return errcode.Wrap(errcode.ParseError, perr, "Content-Digest is not an RFC 8941 dictionary")
	}
	found := false
	for _, s := range digestSchemes {
		if m, ok := d.Get(s); ok {
			if it, ok := m.(httpsfv.Item); !ok {
				return errcode.New(errcode.ParseError, "Content-Digest %s is not a byte sequence", s)
			} else if _, ok := it.Value.([]byte); !ok {
				return errcode.New(errcode.ParseError, "Content-Digest %s is not a byte sequence", s)
			}
			found = true
		}
	}
	if !found {
		return errcode.New(errcode.ContentDigestMismatch, "Content-Digest has no sha-256 or sha-512 member")
	}
	return errcode.Wrap(errcode.ContentDigestMismatch, err, "Content-Digest does not match the body received")
}
