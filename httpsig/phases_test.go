package httpsig

import (
	"io"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// failingBody fails the test at any read: VerifyRequestFields must not read the body.
type failingBody struct{ t *testing.T }

func (b failingBody) Read([]byte) (int, error) {
	b.t.Error("the body was read before Finish")
	return 0, io.ErrUnexpectedEOF
}

func (failingBody) Close() error { return nil }

// Issue 22 point 3: VerifyRequestFields verifies the signature over the fields without
// reading the body; Finish then reads it, checks it against the authenticated
// Content-Digest, and claims the nonce only when it matched, so that a request refused
// for its body does not spend the nonce of the request as signed.
func TestIssue22_3_FieldsThenBody(t *testing.T) {
	f := newFixture(t, keys.ES256)
	replay := newMemReplay()
	v := f.verifier(WithReplay(replay))
	req, _ := f.signedRequest()
	tampered := req.Clone(ctx)

	tampered.Body = failingBody{t}
	p, err := v.VerifyRequestFields(ctx, tampered)
	mustOK(t, err)
	if p.WIT().Subject.String() != "spiffe://example.org/client" {
		t.Fatalf("sender %s", p.WIT().Subject)
	}
	tampered.Body = readCloser(`{"amount":999}`)
	_, err = p.Finish(ctx)
	wantCode(t, err, errcode.ContentDigestMismatch)

	p, err = v.VerifyRequestFields(ctx, req)
	mustOK(t, err)
	res, err := p.Finish(ctx)
	mustOK(t, err)
	if b, _ := io.ReadAll(req.Body); string(b) != `{"amount":100}` || res.Nonce == "" {
		t.Fatalf("body %q after Finish", b)
	}
	p, err = v.VerifyRequestFields(ctx, req)
	mustOK(t, err)
	req.Body = readCloser(`{"amount":100}`)
	_, err = p.Finish(ctx)
	wantCode(t, err, errcode.Replayed)
}

// CheckRequestContent (a Content-Digest a WPT binds) applies SIG-4's rules and bound.
func TestIssue22_4_CheckRequestContent(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req, _ := f.signedRequest()
	mustOK(t, CheckRequestContent(req, 0))
	if b, _ := io.ReadAll(req.Body); string(b) != `{"amount":100}` {
		t.Fatalf("body %q", b)
	}
	req.Body = readCloser(`{"amount":999}`)
	wantCode(t, CheckRequestContent(req, 0), errcode.ContentDigestMismatch)
	req.Body, req.ContentLength = readCloser(strings.Repeat("a", 20)), 20
	wantCode(t, CheckRequestContent(req, 10), errcode.BodyTooLarge)
}
