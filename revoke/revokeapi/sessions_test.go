package revokeapi_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// fakeLogins records whom it minted a login link for.
type fakeLogins struct {
	mu  sync.Mutex
	who []string
}

func (f *fakeLogins) NewLogin(admin identifier.ID) (revokeapi.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.who = append(f.who, admin.String())
	return revokeapi.Session{LoginURL: "http://page.example/admin/login?code=x", ExpiresAt: time.Unix(60, 0)}, nil
}

func (f *fakeLogins) minted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.who...)
}

// Issue 26 point 3 (b): an administrator authenticated as for the rest of the API (WIT
// + HTTP signature) gets a one-time login link; anyone else, a request without a
// credential, a body other than {}, a cookie or a GET gets none.
func TestIssue26Point3_SessionsOnlyForAuthenticatedAdministrators(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	s, err := w.client(w.admin).NewSession(ctx)
	if err != nil || s.LoginURL == "" {
		t.Fatalf("an administrator's session request: %v %+v", err, s)
	}
	if _, err := w.client(w.user).NewSession(ctx); !errcode.Is(err, errcode.NotAuthorized) {
		t.Errorf("a workload that is no administrator: %v", err)
	}
	if _, err := w.client(w.foreign).NewSession(ctx); err == nil {
		t.Error("another trust domain's administrator got a login link")
	}
	sessions := strings.TrimSuffix(w.url, revokeapi.Path) + revokeapi.SessionsPath
	post := func(body string, sign bool, hdr map[string]string) (int, errcode.Code) {
		req, _ := http.NewRequest(http.MethodPost, sessions, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if sign {
			if _, err := httpsig.NewSigner(w.admin.Key, w.admin.WIT, httpsig.WithClock(w.clock.Now)).SignRequest(req, w.url); err != nil {
				t.Fatal(err)
			}
		}
		res, b := testkit.Do(t, http.DefaultClient, req)
		return res.StatusCode, errcode.CodeOf(problem.Read(res.StatusCode, b))
	}
	for _, c := range []struct {
		name   string
		body   string
		sign   bool
		hdr    map[string]string
		status int
		code   errcode.Code
	}{
		{"no credential", "{}", false, nil, 401, errcode.MissingCredential},
		{"only a cookie", "{}", false, map[string]string{"Cookie": "dialogtrust-session=x"}, 401, errcode.MissingCredential},
		{"a body other than {}", `{"admin":"wimse://a.example/ops/alice"}`, true, nil, 400, errcode.InvalidRequest},
		{"a cross-site browser request", "{}", true, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, errcode.OriginNotAllowed},
	} {
		if status, code := post(c.body, c.sign, c.hdr); status != c.status || code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, code, c.status, c.code)
		}
	}
	res, err := http.Get(sessions)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: %d", revokeapi.SessionsPath, res.StatusCode)
	}
	if got := w.logins.minted(); len(got) != 1 || got[0] != w.admin.ID.String() {
		t.Errorf("login links minted for %v, want only the administrator's one", got)
	}
}
