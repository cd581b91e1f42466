package tts

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Issue 12 point 5 at the TTS: request_details naming dlg twice gets no Txn-Token
// (encoding/json would record the last, "B"), nor does a dlg no Dialog-Context can
// carry, nor an unsigned_json subject token naming sub twice.
func TestTT1_3_DuplicateMembersAndDialogGrammar(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	subject := e.accessToken("alice", "trip.read", 0)
	for _, details := range []string{`{"dlg":"A","dlg":"B"}`, `{"dlg":"A","x":{"y":1,"y":2}}`, `{"dlg":"a\"b"}`,
		`{"dlg":"` + strings.Repeat("d", 129) + `"}`} {
		form := baseForm(tdA, "trip.read", subject, TokenTypeAccessToken)
		form.Set("request_details", details)
		status, _, body := e.rawPost(w, form, nil)
		wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.InvalidRequest)
	}
	form := baseForm(tdA, "trip.read", subject, TokenTypeAccessToken)
	form.Set("request_context", `{"ip":"1","ip":"2"}`)
	status, _, body := e.rawPost(w, form, nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.InvalidRequest)

	gw := e.workload("/edge-gateway")
	_, err := e.request(gw, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: `{"sub":"alice","sub":"admin","scope":"trip.read"}`,
		SubjectTokenType: TokenTypeUnsignedJSON})
	wantCode(t, err, errcode.InvalidEncoding)
	_, err = e.request(gw, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: `{"sub":"alice","x":{"a":1,"a":2}}`,
		SubjectTokenType: TokenTypeUnsignedJSON})
	wantCode(t, err, errcode.InvalidEncoding)
	_, c := e.mustRequest(gw, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: `{"sub":"alice","scope":"trip.read"}`,
		SubjectTokenType: TokenTypeUnsignedJSON})
	if c.Sub != "alice" {
		t.Fatalf("claims %+v", c)
	}
}
