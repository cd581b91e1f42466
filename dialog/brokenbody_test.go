package dialog_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// captured keeps the request a Transport would send, and answers 204 itself.
type captured struct{ req *http.Request }

func (c *captured) RoundTrip(r *http.Request) (*http.Response, error) {
	c.req = r
	return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// Section 12: a WPT-proved request whose body breaks off on the wire, at a receiver that
// reads the body to find a handoff, is a failed check (400 invalid_request), not a
// check that could not be completed (503).
func TestDialogBindingSec12_BrokenBodyIsAFailedCheck(t *testing.T) {
	f := newFigure3(t)
	aud := f.toolSrv.URL + "/invoke"
	wits := f.d.Validator()
	rc, err := dialog.NewReceiver(
		dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences(aud), wpt.WithClock(f.clock.Now))),
		dialog.WithHandoffs(handoff.NewReceiver(f.t1.ID.String(), nil, store.NewMemoryRecords()), nil))
	if err != nil {
		t.Fatal(err)
	}
	f.toolSrv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the handler ran with a broken body")
	}))

	const body = `{"jsonrpc":"2.0","method":"tools/call","params":{}}`
	capture := &captured{}
	tr := &agent.Transport{Source: f.source(f.a2), Proof: proof.WPT, Base: capture}
	if _, err := (&http.Client{Transport: tr}).Post(aud, "application/json", strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", f.toolSrv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /invoke HTTP/1.1\r\nHost: %s\r\n", capture.req.URL.Host)
	h := capture.req.Header.Clone()
	h.Del("Content-Length")
	if err := h.Write(conn); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "Content-Length: %d\r\n\r\n%s", len(body), body[:10])
	conn.(*net.TCPConn).CloseWrite()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var p problem.Details
	_ = json.Unmarshal(b, &p)
	if res.StatusCode != http.StatusBadRequest || p.Code != "invalid_request" || p.Kind != "failed" {
		t.Fatalf("status %d %s, want 400 invalid_request, kind failed", res.StatusCode, b)
	}
}
