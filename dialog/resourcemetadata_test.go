package dialog_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// RFC 9728 section 3.1: the well-known suffix goes between the host and the path and
// query; the slash after the host of a resource without a path is dropped. The first
// two rows are the section's own examples (with and without a path).
func TestRFC9728Section3_1WellKnownURL(t *testing.T) {
	for resource, want := range map[string]string{
		"https://resource.example.com/resource1":   "https://resource.example.com/.well-known/oauth-protected-resource/resource1",
		"https://resource.example.com":             "https://resource.example.com/.well-known/oauth-protected-resource",
		"https://resource.example.com/":            "https://resource.example.com/.well-known/oauth-protected-resource",
		"https://resource.example.com/?tenant=1":   "https://resource.example.com/.well-known/oauth-protected-resource?tenant=1",
		"https://r.example:8443/a/b?x=1":           "https://r.example:8443/.well-known/oauth-protected-resource/a/b?x=1",
		"https://r.example/a%2Fb":                  "https://r.example/.well-known/oauth-protected-resource/a%2Fb",
		"http://127.0.0.1:9481/mcp":                "http://127.0.0.1:9481/.well-known/oauth-protected-resource/mcp",
		"http://localhost/mcp":                     "http://localhost/.well-known/oauth-protected-resource/mcp",
		"https://[2001:db8::1]/api/v1":             "https://[2001:db8::1]/.well-known/oauth-protected-resource/api/v1",
		"https://resource.example.com/resource1/x": "https://resource.example.com/.well-known/oauth-protected-resource/resource1/x",
	} {
		got, err := dialog.ResourceMetadataURL(resource)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", resource, got, err, want)
		}
	}
}

// Section 1.2: a resource identifier is an https URL without fragment; the others are
// refused, as is a path a client could read two ways (a final "/", which RFC 9728
// keeps and the MCP SDK drops) and a character that cannot stand in the quoted
// resource_metadata parameter.
func TestRFC9728ResourceIdentifierRefused(t *testing.T) {
	for _, resource := range []string{
		"", "/mcp", "resource.example.com/mcp", "ftp://r.example/x", "http://r.example/mcp",
		"https://r.example/mcp#frag", "https://r.example/mcp#", "https://user:pw@r.example/mcp",
		"https://r.example/mcp/", "https://r.example/a/../b", "https://r.example//b", "https://r.example/a/./b",
		`https://r.example/a?b="c"`, `https://r.example/a?b=\c`, "https://r.example/a b", "https://r.example/é",
		"https://r.example/mcp?", "http://127.0.0.1.example/mcp",
	} {
		if got, err := dialog.ResourceMetadataURL(resource); errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Errorf("%q: %q %v, want invalid_request", resource, got, err)
		}
	}
}

func metadataReceiver(t *testing.T, md dialog.ResourceMetadata, withSig, withWPT bool) *dialog.Receiver {
	t.Helper()
	f := newFigure3(t)
	wits := f.d.Validator(wit.WithCache(64, time.Minute))
	replay := store.NewMemory(store.WithClock(f.clock.Now))
	var opts []dialog.ReceiverOption
	if withSig {
		opts = append(opts, dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences("https://b.example/mcp"), httpsig.WithReplay(replay), httpsig.WithClock(f.clock.Now))))
	}
	if withWPT {
		opts = append(opts, dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences("https://b.example/mcp"), wpt.WithReplay(replay), wpt.WithClock(f.clock.Now))))
	}
	if md.Resource != "" {
		opts = append(opts, dialog.WithResourceMetadata(md))
	}
	rc, err := dialog.NewReceiver(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// Section 2 and 3.2: the document holds the members given, resource first among them;
// array members without elements are omitted, but bearer_methods_supported, which is
// [] (section 2: no bearer method is supported; the receiver takes no bearer token);
// the extension member names the proofs the receiver takes, from its configuration.
func TestRFC9728Section2MetadataMembers(t *testing.T) {
	md := dialog.ResourceMetadata{Resource: "https://b.example/mcp", AuthorizationServers: []string{"https://tts.b.example"},
		ScopesSupported: []string{"trip.book", "trip.read"}, ResourceName: "Agent B", ResourceDocumentation: "https://b.example/docs"}
	for _, tc := range []struct {
		sig, wpt bool
		proofs   []any
	}{{true, true, []any{"httpsig", "wpt"}}, {true, false, []any{"httpsig"}}, {false, true, []any{"wpt"}}} {
		rc := metadataReceiver(t, md, tc.sig, tc.wpt)
		path, h := rc.ResourceMetadataHandler()
		if path != "/.well-known/oauth-protected-resource/mcp" || h == nil {
			t.Fatalf("mounted at %q", path)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://b.example"+path, nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || !strings.Contains(rec.Header().Get("Cache-Control"), "max-age=") {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"resource": "https://b.example/mcp", "authorization_servers": []any{"https://tts.b.example"},
			"scopes_supported": []any{"trip.book", "trip.read"}, "bearer_methods_supported": []any{},
			"resource_name": "Agent B", "resource_documentation": "https://b.example/docs", dialog.ProofsSupportedMember: tc.proofs}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
	}
	// Only the resource given: every other member but bearer_methods_supported and the
	// proofs is omitted (section 3.2: no zero-valued parameter).
	rc := metadataReceiver(t, dialog.ResourceMetadata{Resource: "https://b.example"}, false, true)
	path, h := rc.ResourceMetadataHandler()
	if path != "/.well-known/oauth-protected-resource" {
		t.Fatal(path)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://b.example"+path, nil))
	if body := strings.TrimSpace(rec.Body.String()); body != `{"resource":"https://b.example","bearer_methods_supported":[],"dialogtrust_wimse_proofs_supported":["wpt"]}` {
		t.Fatal(body)
	}
	// Without the option there is nothing to mount.
	if path, h := metadataReceiver(t, dialog.ResourceMetadata{}, true, true).ResourceMetadataHandler(); path != "" || h != nil {
		t.Fatal(path)
	}
}

// NewReceiver refuses a document it would publish wrong.
func TestRFC9728MetadataChecked(t *testing.T) {
	f := newFigure3(t)
	v := wpt.NewVerifier(f.d.Validator(), wpt.WithAudiences("https://b.example/mcp"))
	for name, md := range map[string]dialog.ResourceMetadata{
		"no resource":         {},
		"plain http resource": {Resource: "http://b.example/mcp"},
		"issuer with query":   {Resource: "https://b.example/mcp", AuthorizationServers: []string{"https://tts.example/?x=1"}},
		"issuer not https":    {Resource: "https://b.example/mcp", AuthorizationServers: []string{"http://tts.example"}},
		"issuer fragment":     {Resource: "https://b.example/mcp", AuthorizationServers: []string{"https://tts.example#a"}},
		"scope with space":    {Resource: "https://b.example/mcp", ScopesSupported: []string{"a b"}},
		"empty scope":         {Resource: "https://b.example/mcp", ScopesSupported: []string{""}},
		"documentation":       {Resource: "https://b.example/mcp", ResourceDocumentation: "javascript:alert(1)"},
		"jwks_uri":            {Resource: "https://b.example/mcp", JWKSURI: "http://b.example/jwks"},
		"long name":           {Resource: "https://b.example/mcp", ResourceName: strings.Repeat("x", 257)},
		"too large":           {Resource: "https://b.example/mcp", ScopesSupported: strings.Split(strings.Repeat("scope.value.x ", 1500), " ")[:1500]},
	} {
		if _, err := dialog.NewReceiver(dialog.WithWPT(v), dialog.WithResourceMetadata(md)); errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Section 3.1: the metadata is read with GET (HEAD gives its fields); any other
// method is refused with 405 and Allow, and a request with another query (the metadata
// URL of another resource) with 404.
func TestRFC9728MetadataGetHeadOnly(t *testing.T) {
	rc := metadataReceiver(t, dialog.ResourceMetadata{Resource: "https://b.example/mcp?tenant=7"}, true, true)
	path, h := rc.ResourceMetadataHandler()
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, path+"?tenant=7", nil))
	head := httptest.NewRecorder()
	h.ServeHTTP(head, httptest.NewRequest(http.MethodHead, path+"?tenant=7", nil))
	if get.Code != 200 || head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") != get.Header().Get("Content-Length") ||
		get.Header().Get("Content-Length") == "" || head.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %d %v, HEAD %d %v %q", get.Code, get.Header(), head.Code, head.Header(), head.Body)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, "PROPFIND"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, path+"?tenant=7", strings.NewReader(`{"resource":"https://evil.example"}`)))
		d := problemOf(t, rec)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" || d.Code != string(errcode.InvalidRequest) || strings.Contains(rec.Body.String(), "tenant") {
			t.Errorf("%s: %d %v %s", m, rec.Code, rec.Header(), rec.Body)
		}
	}
	for _, q := range []string{"", "?tenant=8", "?tenant=7&x=1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path+q, nil))
		if rec.Code != http.StatusNotFound || problemOf(t, rec).Code != string(errcode.NoRoute) {
			t.Errorf("%q: %d %s", q, rec.Code, rec.Body)
		}
	}
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) problem.Details {
	t.Helper()
	var d problem.Details
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatalf("%d %q: %v", rec.Code, rec.Body, err)
	}
	return d
}

// wpt section 2.1: a WPT receiver's 401 carries WWW-Authenticate: WPT; RFC 9728
// section 5.1: with metadata the challenge names it in resource_metadata. A receiver
// of HTTP signatures alone has no scheme to name (draft-ietf-wimse-http-signature
// defines none), so its 401 carries no challenge; and no challenge is ever Bearer.
func TestRFC9728Section5_1ChallengeOn401(t *testing.T) {
	md := dialog.ResourceMetadata{Resource: "https://b.example/mcp", AuthorizationServers: []string{"https://tts.b.example"}}
	const withMetadata = `WPT resource_metadata="https://b.example/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		name     string
		md       dialog.ResourceMetadata
		sig, wpt bool
		want     string
	}{
		{"wpt and httpsig, metadata", md, true, true, withMetadata},
		{"wpt, metadata", md, false, true, withMetadata},
		{"wpt, no metadata", dialog.ResourceMetadata{}, false, true, "WPT"},
		{"httpsig, metadata", md, true, false, ""},
		{"httpsig, no metadata", dialog.ResourceMetadata{}, true, false, ""},
	} {
		rc := metadataReceiver(t, tc.md, tc.sig, tc.wpt)
		if rc.Challenge() != tc.want {
			t.Errorf("%s: Challenge %q", tc.name, rc.Challenge())
		}
		srv := httptest.NewServer(rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			t.Error("the handler ran")
		})))
		// No proof at all, and a WPT that is no JWT: both 401.
		for _, authz := range []string{"", "WPT not-a-jwt"} {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{}`))
			if authz != "" {
				req.Header.Set("Authorization", authz)
				req.Header.Set(wit.HeaderName, "a.b.c")
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			got := res.Header.Values("WWW-Authenticate")
			if res.StatusCode != http.StatusUnauthorized || strings.Join(got, ",") != tc.want {
				t.Errorf("%s, %q: %d %q", tc.name, authz, res.StatusCode, got)
			}
			if strings.Contains(strings.ToLower(strings.Join(got, ",")), "bearer") {
				t.Errorf("%s: a Bearer challenge", tc.name)
			}
		}
		srv.Close()
		// A refusal that is not a 401 carries no challenge.
		rec := httptest.NewRecorder()
		rc.WriteRefusal(rec, errcode.New(errcode.InvalidDialogContext, "x"))
		if rec.Code != 400 || rec.Header().Get("WWW-Authenticate") != "" {
			t.Errorf("%s: %d %v", tc.name, rec.Code, rec.Header())
		}
		rec = httptest.NewRecorder()
		rc.WriteRefusal(rec, errcode.New(errcode.MissingCredential, "x"))
		if rec.Code != 401 || rec.Header().Get("WWW-Authenticate") != tc.want {
			t.Errorf("%s: WriteRefusal %d %v", tc.name, rec.Code, rec.Header())
		}
	}
}

// A verified request through a receiver with metadata is answered as without it: the
// challenge goes on refusals only.
func TestRFC9728NoChallengeOnSuccess(t *testing.T) {
	f := newFigure3(t)
	got := make(chan *dialog.Verified, 1)
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = f.receiver(t, srv.URL+"/invoke", f.t1, false,
		dialog.WithResourceMetadata(dialog.ResourceMetadata{Resource: srv.URL + "/invoke"})).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- dialog.FromRequest(r)
	}))
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/invoke", nil)
	res, err := f.agentLax(f.a1, nil, proof.WPT).Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("WWW-Authenticate") != "" || (<-got).Proof != proof.WPT {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
}
