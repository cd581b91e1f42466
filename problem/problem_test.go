package problem

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
)

func TestStatusAndRoundTrip(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
	}{
		{errcode.New(errcode.InvalidSignature, "x"), 401},
		{errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "x"), 503},
		{errcode.New(errcode.SubjectNotAllowed, "x"), 403},
		{errcode.New(errcode.InvalidRequest, "x"), 400},
		{errcode.New(errcode.HostNotAllowed, "x"), 421},
		{errcode.New(errcode.OriginNotAllowed, "x"), 403},
		{errors.New("plain"), 500},
	} {
		rec := httptest.NewRecorder()
		Write(rec, c.err)
		res := rec.Result()
		if res.StatusCode != c.status || res.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%v: %d %s", c.err, res.StatusCode, res.Header.Get("Content-Type"))
		}
		body, _ := io.ReadAll(res.Body)
		back := Read(res.StatusCode, body)
		if errcode.CodeOf(back) != errcode.CodeOf(c.err) || errcode.KindOf(back) != errcode.KindOf(c.err) {
			t.Fatalf("round trip %v -> %v", c.err, back)
		}
	}
	if Status(errcode.New(errcode.Replayed, "")) != http.StatusUnauthorized {
		t.Fatal("replay status")
	}
}

// A detail is bounded even when a caller put a long string in it unbounded.
func TestDetailIsBounded(t *testing.T) {
	d := From(errcode.New(errcode.UnknownKey, "kid %q", strings.Repeat("é", 3000)))
	if len(d.Detail) > MaxDetail+3 || !strings.HasSuffix(d.Detail, "...") || !utf8.ValidString(d.Detail) {
		t.Fatalf("detail of %d octets", len(d.Detail))
	}
}

// The refusal of a JSON-RPC request carries the document's code and kind in the
// error's data; Read recovers them as from a problem document. A JSON-RPC error
// without them is unmapped.
func TestReadJSONRPCError(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"store_unavailable: x","data":{"type":"urn:dialogtrust:error:store_unavailable","code":"store_unavailable","kind":"could_not_complete","detail":"x","error":"store_unavailable: x"}}}`
	back := Read(http.StatusOK, []byte(body))
	if errcode.CodeOf(back) != errcode.StoreUnavailable || errcode.KindOf(back) != errcode.Incomplete {
		t.Fatalf("read %v", back)
	}
	for _, other := range []string{
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
	} {
		if got := errcode.CodeOf(Read(http.StatusOK, []byte(other))); got != errcode.Unmapped {
			t.Fatalf("%s: %s", other, got)
		}
	}
}
