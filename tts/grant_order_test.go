package tts

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// Issue 23 point 7 (the endpoint authenticates once): the TTS's parameter rules
// (oauth.md 1.3) still come before client authentication (1.9), as they did when the
// grant authenticated its client itself: a malformed request is refused on its
// parameters whatever its credential (none, a bad one, a Txn-Token), and a refused
// request claims no proof in the replay store.
func TestIssue23_7_TxnParametersBeforeAuthentication(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	txn, _ := e.original(w)
	good := baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken)
	with := func(set, del string, v string) url.Values {
		f := url.Values{}
		for k, vs := range good {
			f[k] = append([]string(nil), vs...)
		}
		if del != "" {
			f.Del(del)
		}
		if set != "" {
			f.Set(set, v)
		}
		return f
	}
	creds := map[string]func(*http.Request){
		"none": nil,
		"a bad WPT": func(r *http.Request) {
			r.Header.Set("Authorization", "WPT a.b.c")
			r.Header.Set("Workload-Identity-Token", "a.b.c")
		},
		"a Txn-Token": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+txn) },
	}
	for name, tc := range map[string]struct {
		form   url.Values
		status int
		oauth  string
		code   errcode.Code
	}{
		"grant_type":           {with("grant_type", "", "password"), 400, oauth.ErrUnsupportedGrantType, errcode.UnsupportedGrantType},
		"requested_token_type": {with("requested_token_type", "", "urn:x"), 400, oauth.ErrInvalidRequest, errcode.UnsupportedTokenType},
		"scope missing":        {with("", "scope", ""), 400, oauth.ErrInvalidRequest, errcode.InvalidRequest},
		"resource":             {with("resource", "", "https://r.example/"), 400, oauth.ErrInvalidRequest, errcode.InvalidRequest},
	} {
		for cname, mutate := range creds {
			t.Run(name+"/"+cname, func(t *testing.T) {
				status, _, body := e.rawPost(nil, tc.form, mutate)
				wantOAuth(t, status, body, tc.status, tc.oauth, tc.code)
			})
		}
	}

	// A WPT does not cover the body: the same proof, refused on a parameter, is not
	// spent, and still authenticates the corrected request.
	var proved http.Header
	status, _, body := e.rawPost(w, with("", "subject_token", ""), func(r *http.Request) { proved = r.Header.Clone() })
	wantOAuth(t, status, body, 400, oauth.ErrInvalidRequest, errcode.InvalidRequest)
	status, _, body = e.rawPost(nil, good, func(r *http.Request) { r.Header = proved })
	if status != http.StatusOK {
		t.Fatalf("the proof of a request refused on its parameters was spent: %d %s", status, body)
	}
	// And once spent, it is refused: the replay store is the authenticator's.
	status, _, body = e.rawPost(nil, good, func(r *http.Request) { r.Header = proved })
	wantOAuth(t, status, body, http.StatusUnauthorized, oauth.ErrInvalidClient, errcode.Replayed)
}
