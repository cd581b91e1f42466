package httpsig

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
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
// because RFC 9530 allows it and it is no weaker. checkContentDigest relies on the
// order: sha-256, then sha-512.
var digestSchemes = [2]string{httpsign.DigestSha256, httpsign.DigestSha512}

// contentDigest returns the Content-Digest value (sha-256) of body: the digest is
// computed here over the octets already in hand (httpsign's helper would copy the body
// through a reader first) and serialized by httpsfv, exactly as
// httpsign.GenerateContentDigestHeader does.
func contentDigest(body []byte) (string, error) {
	sum := sha256.Sum256(body)
	d := httpsfv.NewDictionary()
	d.Add(httpsign.DigestSha256, httpsfv.Item{Value: sum[:], Params: itemParams.none})
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidRequest, err, "computing Content-Digest")
	}
	return s, nil
}

// readBody reads a received body, at most max octets, and returns it with a fresh reader
// over the same octets for the handler. A nil or http.NoBody body is no content.
//
// A request body that cannot be read (shorter than its Content-Length, a malformed
// chunk) is the client's broken message: a failed check (invalid_request, 400), never
// "could not be completed". A response body that breaks off is the connection to the
// server failing: that check could not be completed.
func readBody(body io.ReadCloser, contentLength, max int64, response bool) ([]byte, io.ReadCloser, error) {
	if body == nil || body == http.NoBody {
		return nil, body, nil
	}
	if contentLength > max {
		return nil, body, errcode.New(errcode.BodyTooLarge, "body is %d octets, limit %d", contentLength, max)
	}
	// Reading stops one octet past max, and an overrun is an error, never a silent
	// truncation: a digest is never checked over part of a body.
	b, err := readAll(body, contentLength, max)
	_ = body.Close()
	if err != nil {
		var tooLarge *http.MaxBytesError // also what a handler's own MaxBytesReader returns
		if err == errOverLimit || errors.As(err, &tooLarge) {
			return nil, http.NoBody, errcode.New(errcode.BodyTooLarge, "body is longer than %d octets", max)
		}
		if response {
			return nil, http.NoBody, errcode.Unavailable(errcode.InvalidRequest, err, "the response body could not be read")
		}
		return nil, http.NoBody, errcode.Wrap(errcode.InvalidRequest, err, "the request body could not be read")
	}
	return b, &bodyReader{Reader: *bytes.NewReader(b)}, nil
}

// checkContent is step 7 (SIG-4): the body, read within max, against the parsed
// Content-Digest d. *body is replaced by a reader over the octets read, whatever the
// outcome, so that what goes on is exactly what was checked.
func checkContent(d receivedDigest, body *io.ReadCloser, contentLength, max int64, response bool) error {
	content, rc, err := readBody(*body, contentLength, max, response)
	*body = rc
	if err != nil {
		return err
	}
	return d.check(content)
}

// ContentDigest returns the Content-Digest value (sha-256) of body, as SignRequest sets
// it. A proof that binds the field in another way (a WPT's oth) sets it with this.
func ContentDigest(body []byte) (string, error) { return contentDigest(body) }

// CheckRequestContent is SIG-4 for a Content-Digest field that another proof bound (a
// WPT binds it through oth): the field is parsed, req.Body is read within max octets
// (body_too_large beyond) and compared with it, and req.Body is replaced by a reader
// over the octets checked. The codes are those of VerifyRequest's step 7. Run it only
// once the proof that binds the field verified: it reads the body.
func CheckRequestContent(req *http.Request, max int64) error {
	d, err := parseContentDigest(req.Header)
	if err != nil {
		return err
	}
	if max <= 0 {
		max = DefaultMaxBodySize
	}
	return checkContent(d, &req.Body, req.ContentLength, max, false)
}

// bodyReader is the body handed back to the handler: io.NopCloser(bytes.NewReader(b))
// in one allocation instead of two.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// errOverLimit: the body is longer than the limit readAll was given.
var errOverLimit = errors.New("body over limit")

// readAll is io.ReadAll starting from the announced length, so that a body of known
// size is read into one allocation. The announcement is not trusted beyond 64 KiB:
// memory beyond that is spent only on octets that actually arrive. It never asks r for
// more than max+1 octets in all (what http.MaxBytesReader does): having more than max
// is errOverLimit.
func readAll(r io.Reader, contentLength, max int64) ([]byte, error) {
	size := int64(512)
	if contentLength >= 0 {
		size = min(contentLength, 64<<10) + 1 // +1 to see EOF without growing
	}
	limit := max + 1 // octets ever asked for
	if limit < max {
		limit = max // max is math.MaxInt64
	}
	size = min(size, limit)
	b := make([]byte, 0, size)
	for {
		p := b[len(b):cap(b)]
		if rest := limit - int64(len(b)); int64(len(p)) > rest {
			p = p[:rest]
		}
		n, err := r.Read(p)
		b = b[:len(b)+n]
		if int64(len(b)) > max {
			return nil, errOverLimit
		}
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
//
// The rules are those of httpsign.ValidateContentDigestHeader (which this replaced: it
// copies the body and parses the field twice on failure), with its failures classified:
// a field that is not an RFC 8941 dictionary, or whose sha-256 or sha-512 member is not
// a byte sequence, is parse_error; no such member, or a digest that differs, is
// content_digest_mismatch. Members of other algorithms are ignored.
func checkContentDigest(h http.Header, body []byte) error {
	d, err := parseContentDigest(h)
	if err != nil {
		return err
	}
	return d.check(body)
}

// receivedDigest is a parsed Content-Digest field: the sha-256 and sha-512 members
// present (in digestSchemes order), and whether the field is there at all.
type receivedDigest struct {
	present bool
	got     [2][]byte
	has     [2]bool
}

// parseContentDigest is the part of SIG-4 that needs only the field: its bound, its
// syntax and the type of its members. The verifier runs it before the signature, the
// comparison with the body after.
func parseContentDigest(h http.Header) (receivedDigest, error) {
	var rd receivedDigest
	vals := h[headerContentDigest]
	if len(vals) == 0 {
		return rd, nil
	}
	rd.present = true
	if err := checkSize(headerContentDigest, vals, maxDigestFieldSize); err != nil {
		return rd, err
	}
	d, err := httpsfv.UnmarshalDictionary(vals)
	if err != nil {
		return rd, errcode.Wrap(errcode.ParseError, err, "Content-Digest is not an RFC 8941 dictionary")
	}
	// Every recognized member is checked for its type before any digest is compared, so
	// that a malformed member is parse_error whatever the other members hold.
	for i, s := range digestSchemes {
		m, ok := d.Get(s)
		if !ok {
			continue
		}
		it, ok := m.(httpsfv.Item)
		if !ok {
			return rd, errcode.New(errcode.ParseError, "Content-Digest %s is not a byte sequence", s)
		}
		b, ok := it.Value.([]byte)
		if !ok {
			return rd, errcode.New(errcode.ParseError, "Content-Digest %s is not a byte sequence", s)
		}
		rd.got[i], rd.has[i] = b, true
	}
	return rd, nil
}

// check compares the parsed field with the content received.
func (rd receivedDigest) check(body []byte) error {
	if !rd.present {
		if len(body) > 0 {
			return errcode.New(errcode.MissingComponent, "the message has content but no Content-Digest")
		}
		return nil
	}
	if !rd.has[0] && !rd.has[1] {
		return errcode.New(errcode.ContentDigestMismatch, "Content-Digest has no sha-256 or sha-512 member")
	}
	if rd.has[0] {
		if sum := sha256.Sum256(body); !bytes.Equal(rd.got[0], sum[:]) {
			return errDigestMismatch(digestSchemes[0])
		}
	}
	if rd.has[1] {
		if sum := sha512.Sum512(body); !bytes.Equal(rd.got[1], sum[:]) {
			return errDigestMismatch(digestSchemes[1])
		}
	}
	return nil
}

func errDigestMismatch(scheme string) error {
	return errcode.Wrap(errcode.ContentDigestMismatch, fmt.Errorf("digest mismatch for scheme %s", scheme), "Content-Digest does not match the body received")
}
