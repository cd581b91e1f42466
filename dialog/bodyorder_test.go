package dialog_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// recordingBody is a request body that counts the reads made of it.
type recordingBody struct {
	r     *bytes.Reader
	reads atomic.Int32
}

func (b *recordingBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.r.Read(p)
}

func (*recordingBody) Close() error { return nil }

// recorded puts a recording body over body on r, as a server would hand it over.
func recorded(r *http.Request, body string) *recordingBody {
	rb := &recordingBody{r: bytes.NewReader([]byte(body))}
	r.Body, r.GetBody, r.ContentLength = rb, nil, int64(len(body))
	r.Header.Set("Expect", "100-continue")
	return rb
}

const orderAud = "https://t1.a.example/"

// signedAs is a POST of body to orderAud with the fields h, HTTP-signed by a1 (or, with
// bindWPT, with a WPT of a1 that binds the request), its body then a recording one.
func (f *figure3) signedAs(t *testing.T, body string, h http.Header, bindWPT bool) (*http.Request, *recordingBody) {
	t.Helper()
	r := httptest.NewRequest("POST", orderAud+"invoke", strings.NewReader(body))
	for k, v := range h {
		r.Header[k] = v
	}
	var err error
	if bindWPT {
		err = wpt.SignRequest(r, f.a1.Key, f.a1.WIT, orderAud, wpt.RequestOptions{BindRequest: true}, wpt.WithClock(f.clock.Now))
	} else {
		_, err = httpsig.NewSigner(f.a1.Key, f.a1.WIT, httpsig.WithClock(f.clock.Now)).SignRequest(r, orderAud)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, recorded(r, body)
}

// Issue 22 point 3: a request that does not authenticate has no octet of its body read
// (and so, at a net/http server, no 100 Continue sent): no proof, a signature that does
// not verify, a WPT for another recipient.
func TestIssue22_3_UnauthenticatedBodyNotRead(t *testing.T) {
	f := newFigure3(t)
	rc := f.receiver(t, orderAud, f.t1, true)
	for name, c := range map[string]struct {
		req  func() (*http.Request, *recordingBody)
		code errcode.Code
	}{
		"no proof": {func() (*http.Request, *recordingBody) {
			r := httptest.NewRequest("POST", orderAud+"invoke", nil)
			return r, recorded(r, `{"q":1}`)
		}, errcode.MissingCredential},
		"signature does not verify": {func() (*http.Request, *recordingBody) {
			r, rb := f.signedAs(t, `{"q":1}`, nil, false)
			r.Method = "PUT" // @method is covered
			return r, rb
		}, errcode.InvalidSignature},
		"WPT for another recipient": {func() (*http.Request, *recordingBody) {
			r := httptest.NewRequest("POST", orderAud+"invoke", strings.NewReader(`{"q":1}`))
			if err := wpt.SignRequest(r, f.a1.Key, f.a1.WIT, "https://other.a.example/", wpt.RequestOptions{BindRequest: true}, wpt.WithClock(f.clock.Now)); err != nil {
				t.Fatal(err)
			}
			return r, recorded(r, `{"q":1}`)
		}, errcode.AudienceMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			r, rb := c.req()
			_, err := rc.Verify(context.Background(), r)
			if got := errcode.CodeOf(err); got != c.code {
				t.Fatalf("got %s (%v), want %s", got, err, c.code)
			}
			if n := rb.reads.Load(); n != 0 {
				t.Fatalf("the body of an unauthenticated request was read (%d reads)", n)
			}
		})
	}
}

// Issue 22 point 3: a request whose proof verifies but whose Txn-Token or
// Dialog-Context is refused has no octet of its body read: the body is read only
// after every field check, with the HTTP signature and with a WPT that binds it.
func TestIssue22_3_FieldRefusalsReadNoBody(t *testing.T) {
	f := newFigure3(t)
	dc, err := dialog.New("D-order", f.a1.ID)
	if err != nil {
		t.Fatal(err)
	}
	otherDC, _ := dialog.New("D-other", f.a1.ID)
	for name, c := range map[string]struct {
		h    http.Header
		more []dialog.ReceiverOption
		code errcode.Code
	}{
		"malformed Txn-Token":         {http.Header{dialog.HeaderName: {dc.Value()}, txntoken.HeaderName: {"not.a.token"}}, nil, errcode.InvalidEncoding},
		"Txn-Token of another dialog": {http.Header{dialog.HeaderName: {dc.Value()}, txntoken.HeaderName: {f.txnToken(t, otherDC.DLG(), "a.example")}}, nil, errcode.DialogMismatch},
		"Txn-Token required":          {http.Header{dialog.HeaderName: {dc.Value()}}, []dialog.ReceiverOption{dialog.RequireTxnToken()}, errcode.MissingCredential},
		"malformed Dialog-Context":    {http.Header{dialog.HeaderName: {`dlg="D1",  initiator="` + f.a1.ID.String() + `"`}}, nil, errcode.InvalidDialogContext},
		"Dialog-Context required":     {http.Header{}, []dialog.ReceiverOption{dialog.RequireDialog()}, errcode.InvalidDialogContext},
	} {
		for _, bindWPT := range []bool{false, true} {
			proofName := map[bool]string{false: "httpsig", true: "wpt"}[bindWPT]
			t.Run(name+"/"+proofName, func(t *testing.T) {
				rc := f.receiver(t, orderAud, f.t1, true, c.more...)
				r, rb := f.signedAs(t, `{"q":1}`, c.h, bindWPT)
				_, err := rc.Verify(context.Background(), r)
				if got := errcode.CodeOf(err); got != c.code {
					t.Fatalf("got %s (%v), want %s", got, err, c.code)
				}
				if n := rb.reads.Load(); n != 0 {
					t.Fatalf("the body was read (%d reads) for a request refused on its fields", n)
				}
			})
		}
	}
}

// Issue 22 point 3: the body is still checked, after the fields, against the
// Content-Digest the signature covers (or the WPT binds); the nonce (jti) is claimed
// after that check, so the request refused for its body did not spend it, and the
// handler gets the octets checked.
func TestIssue22_3_DigestCheckedAfterFields(t *testing.T) {
	for _, bindWPT := range []bool{false, true} {
		t.Run(map[bool]string{false: "httpsig", true: "wpt"}[bindWPT], func(t *testing.T) {
			f := newFigure3(t)
			dc, _ := dialog.New("D-digest", f.a1.ID)
			h := http.Header{dialog.HeaderName: {dc.Value()}, txntoken.HeaderName: {f.txnToken(t, dc.DLG(), "a.example")}}
			rc := f.receiver(t, orderAud, f.t1, true)
			r, _ := f.signedAs(t, `{"q":1}`, h, bindWPT)
			tampered := r.Clone(context.Background())
			recorded(tampered, `{"q":9}`)
			_, err := rc.Verify(context.Background(), tampered)
			if got := errcode.CodeOf(err); got != errcode.ContentDigestMismatch {
				t.Fatalf("a changed body: got %s (%v), want content_digest_mismatch", got, err)
			}
			rb := recorded(r, `{"q":1}`)
			v, err := rc.Verify(context.Background(), r)
			if err != nil {
				t.Fatalf("the request as sent, after its tampered copy: %v", err)
			}
			if rb.reads.Load() == 0 || v.Outcome != dialog.Established {
				t.Fatalf("reads %d, outcome %v", rb.reads.Load(), v.Outcome)
			}
			if got, _ := io.ReadAll(r.Body); string(got) != `{"q":1}` {
				t.Fatalf("the handler's body is %q", got)
			}
		})
	}
}

// Issue 22 point 4: RequireSignatureForBody refuses a WPT request with a body, before
// its body is read, even one whose WPT binds it; a WPT request without a body, and an
// HTTP-signed one with a body, pass.
func TestIssue22_4_RequireSignatureForBody(t *testing.T) {
	f := newFigure3(t)
	rc := f.receiver(t, orderAud, f.t1, false, dialog.RequireSignatureForBody())
	r, rb := f.signedAs(t, `{"q":1}`, nil, true)
	_, err := rc.Verify(context.Background(), r)
	if got := errcode.CodeOf(err); got != errcode.MissingCredential {
		t.Fatalf("a WPT with a body: got %s (%v), want missing_credential", got, err)
	}
	if rb.reads.Load() != 0 {
		t.Fatal("the body was read")
	}
	// Chunked: no Content-Length, a body all the same.
	r, _ = f.signedAs(t, `{"q":1}`, nil, true)
	r.ContentLength = -1
	if _, err := rc.Verify(context.Background(), r); errcode.CodeOf(err) != errcode.MissingCredential {
		t.Fatalf("a chunked WPT request: %v", err)
	}
	get := httptest.NewRequest("GET", orderAud+"invoke", nil)
	if err := wpt.SignRequest(get, f.a1.Key, f.a1.WIT, orderAud, wpt.RequestOptions{}, wpt.WithClock(f.clock.Now)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Verify(context.Background(), get); err != nil {
		t.Fatalf("a WPT without a body: %v", err)
	}
	r, _ = f.signedAs(t, `{"q":1}`, nil, false)
	if _, err := rc.Verify(context.Background(), r); err != nil {
		t.Fatalf("an HTTP-signed request with a body: %v", err)
	}
}
