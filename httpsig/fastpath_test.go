package httpsig

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dunglas/httpsfv"
	"github.com/yaronf/httpsign"
)

// checkContentDigestViaHTTPSign is the earlier checkContentDigest, kept as the reference
// the current one must agree with: httpsign.ValidateContentDigestHeader decides, and a
// failure is classified by parsing the field again.
func checkContentDigestViaHTTPSign(h http.Header, body []byte) error {
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
	err := httpsign.ValidateContentDigestHeader(vals, &rc, digestSchemes[:])
	if err == nil {
		return nil
	}
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

func digestSeeds(body []byte) []string {
	s256 := sha256.Sum256(body)
	s512 := sha512.Sum512(body)
	e256, e512 := b64.EncodeToString(s256[:]), b64.EncodeToString(s512[:])
	return []string{
		"sha-256=:" + e256 + ":",
		"sha-512=:" + e512 + ":",
		"sha-256=:" + e256 + ":, sha-512=:" + e512 + ":",
		"sha-512=:" + e512 + ":, sha-256=:" + e256 + ":",
		"sha-256=:" + e256 + ":, sha-512=:AAAA:",
		"sha-256=:AAAA:, sha-512=:" + e512 + ":",
		"sha-256=:" + e256 + ":, sha-512=?1",
		"sha-256=:" + e256 + ":, sha-512=(:AAAA:)",
		"sha-256=:" + e256 + ":;p=1, md5=:AAAA:",
		"sha-256=::",
		"sha-256",
		"sha-256=\"x\"",
		"unixsum=:AAAA:",
		"md5=:AAAA:, unixsum=3",
		"",
		"sha-256=:" + e256 + ":, sha-256=:AAAA:",
		"sha-256=:AAAA:, sha-256=:" + e256 + ":",
		"sha-256=:" + e256,
		"SHA-256=:" + e256 + ":",
	}
}

// TestContentDigestMatchesHTTPSign: the stdlib-hash check decides and classifies every
// seed exactly as the httpsign-based one did.
func TestContentDigestMatchesHTTPSign(t *testing.T) {
	for _, body := range [][]byte{nil, []byte(`{"a":1}`), bytes.Repeat([]byte("x"), 3000)} {
		for _, d := range digestSeeds(body) {
			for _, vals := range [][]string{{d}, {d, d}, {d, "md5=:AAAA:"}} {
				compareContentDigest(t, http.Header{"Content-Digest": vals}, body)
				compareContentDigest(t, http.Header{"Content-Digest": vals}, append([]byte("!"), body...))
			}
		}
		compareContentDigest(t, http.Header{}, body)
	}
}

func compareContentDigest(t *testing.T, h http.Header, body []byte) {
	t.Helper()
	got, want := checkContentDigest(h, body), checkContentDigestViaHTTPSign(h, body)
	if errcode.CodeOf(got) != errcode.CodeOf(want) {
		t.Fatalf("Content-Digest %q over %q: %v, httpsign-based check: %v", h.Values("Content-Digest"), body, got, want)
	}
}

// FuzzContentDigest compares the check with the httpsign-based reference on arbitrary
// fields and bodies.
func FuzzContentDigest(f *testing.F) {
	for _, body := range []string{"", `{"a":1}`} {
		for _, d := range digestSeeds([]byte(body)) {
			f.Add(d, body)
		}
	}
	f.Fuzz(func(t *testing.T, field, body string) {
		if len(field) > fuzzMaxInput || len(body) > fuzzMaxInput {
			return
		}
		compareContentDigest(t, http.Header{"Content-Digest": {field}}, []byte(body))
	})
}

// chunkReader returns at most n octets per Read, and err after its data.
type chunkReader struct {
	data []byte
	n    int
	err  error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

func (c *chunkReader) Close() error { return nil }

// TestReadBodyLimit: exactly max octets pass, one more is body_too_large whatever the
// announced length and the read sizes, a handler's own MaxBytesReader overrun is
// body_too_large too, and other read errors are invalid_request; the octets handed
// back are the ones read.
func TestReadBodyLimit(t *testing.T) {
	const max = 1000
	for _, size := range []int{0, 1, 511, 512, 513, max - 1, max, max + 1, 5000} {
		data := bytes.Repeat([]byte("z"), size)
		for _, chunk := range []int{1, 7, 512, 1 << 20} {
			for _, cl := range []int64{-1, int64(size), 0, 10} {
				got, rc, err := readBody(&chunkReader{data: data, n: chunk}, cl, max, false)
				if size > max {
					wantCode(t, err, errcode.BodyTooLarge)
					continue
				}
				if cl > max {
					continue
				}
				mustOK(t, err)
				back, _ := io.ReadAll(rc)
				if !bytes.Equal(got, data) || !bytes.Equal(back, data) {
					t.Fatalf("size %d chunk %d cl %d: read %d octets, handed back %d", size, chunk, cl, len(got), len(back))
				}
			}
		}
	}
	_, _, err := readBody(io.NopCloser(http.MaxBytesReader(nil, readCloser("0123456789"), 5)), -1, max, false)
	wantCode(t, err, errcode.BodyTooLarge)
	_, _, err = readBody(&chunkReader{data: []byte("abc"), n: 2, err: errDown}, -1, max, false)
	wantCode(t, err, errcode.InvalidRequest)
	if errcode.KindOf(err) != errcode.Failed {
		t.Fatalf("a request body that cannot be read is %v, want a failed check", errcode.KindOf(err))
	}
	_, _, err = readBody(&chunkReader{data: []byte("abc"), n: 2, err: errDown}, -1, max, true)
	if errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("a response body that breaks off is %v, want could not be completed", errcode.KindOf(err))
	}
	_, _, err = readBody(readCloser("abc"), -1, math.MaxInt64, false)
	mustOK(t, err)
}

// TestSignSerializesOnce: sign, which takes "@signature-params" from the serialized
// Signature-Input member, gives byte for byte the fields and errors of serializing the
// inner list and the fields separately, and leaves the shared item parameters as they
// were.
func TestSignSerializesOnce(t *testing.T) {
	for _, alg := range algs {
		f := newFixture(t, alg)
		req := newRequest(t, http.MethodPost, testURL+"?a=1", `{"amount":100}`)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Digest", "sha-256=:AAAA:")
		m, err := requestMessage(req)
		mustOK(t, err)
		res, err := responseMessage(201, http.Header{"Content-Type": {"text/plain"}}, req)
		mustOK(t, err)
		reqComps := coveredForSigning(requestFixed, requestOptional, m)
		resComps := coveredForSigning(responseFixed, responseOptional, res)
		p := f.params()
		cases := []struct {
			label string
			comps []component
			p     func(Params) Params
			m     *message
		}{
			{"wimse", reqComps, func(p Params) Params { return p }, m},
			{"sig1", reqComps, func(p Params) Params { p.SignResponse = true; return p }, m},
			{"w", resComps, func(p Params) Params { p.Audience = ""; p.ReqNonce = "abc"; return p }, res},
			{"wimse", reqComps, func(p Params) Params { p.Nonce, p.Tag = "", ""; return p }, m},
			{"Wimse", reqComps, func(p Params) Params { return p }, m},
			{"", reqComps, func(p Params) Params { return p }, m},
			{"wimse", reqComps, func(p Params) Params { p.Nonce = "é"; return p }, m},
			{"Wimse", reqComps, func(p Params) Params { p.Nonce = "é"; return p }, m},
			{"Wimse", append(reqComps[:3:3], component{name: "x-absent", key: "X-Absent"}), func(p Params) Params { return p }, m},
			{"wimse", append(reqComps[:3:3], component{name: "x-absent", key: "X-Absent"}), func(p Params) Params { return p }, m},
		}
		for i, c := range cases {
			si, sg, err := sign(f.client.key, c.label, c.comps, c.p(p), c.m)
			si2, sg2, err2 := signSeparately(f.client.key, c.label, c.comps, c.p(p), c.m)
			if si != si2 || sg != sg2 || errcode.CodeOf(err) != errcode.CodeOf(err2) || fmt.Sprint(err) != fmt.Sprint(err2) {
				t.Fatalf("case %d: sign gave %q %q %v, separately %q %q %v", i, si, sg, err, si2, sg2, err2)
			}
		}
	}
	if len(itemParams.none.Names()) != 0 || len(itemParams.req.Names()) != 1 || itemParams.req.Names()[0] != "req" {
		t.Fatalf("shared item parameters were modified: %v %v", itemParams.none.Names(), itemParams.req.Names())
	}
}

// TestContentDigestMatchesHTTPSignGenerate: the field the signer writes is the one
// httpsign.GenerateContentDigestHeader made.
func TestContentDigestMatchesHTTPSignGenerate(t *testing.T) {
	for _, body := range []string{"", "{\"a\":1}\n", strings.Repeat("0123456789", 1000)} {
		got, err := contentDigest([]byte(body))
		mustOK(t, err)
		rc := io.NopCloser(strings.NewReader(body))
		want, err := httpsign.GenerateContentDigestHeader(&rc, []string{httpsign.DigestSha256})
		mustOK(t, err)
		if got != want {
			t.Fatalf("body of %d octets: %q, httpsign %q", len(body), got, want)
		}
	}
}

func TestContainsAnyByte(t *testing.T) {
	const set = "\r\n\x00, "
	for _, s := range []string{"", "a", "abc.def", "a b", "a,b", "x\r", "\ny", "a\x00", strings.Repeat("e", 600) + ",", strings.Repeat("e", 600)} {
		if got, want := containsAnyByte(s, set), strings.ContainsAny(s, set); got != want {
			t.Fatalf("%q: %v, strings.ContainsAny %v", s, got, want)
		}
	}
}
