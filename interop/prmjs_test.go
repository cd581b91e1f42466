package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// Issue 28 (RFC 9728), with a client no one here wrote: the official TypeScript MCP
// SDK (@modelcontextprotocol/sdk, pinned in js/package-lock.json) discovers the
// protected resource metadata of a dialog.Receiver behind httptest and of a real
// `dialogtrust proxy` ingress, with its own discoverOAuthProtectedResourceMetadata
// (js/prm-discovery.mjs), and its own selectResourceURL accepts the resource. The SDK
// reads resource_metadata only from a Bearer challenge, and the receivers send WPT
// (they take no bearer token): the SDK finds the metadata by its well-known probing,
// which the test shows works; the URL the WPT challenge names gives the same document.
// Without node or the SDK the test skips, except under CI=true, where it fails.

// prmResult is what js/prm-discovery.mjs prints.
type prmResult struct {
	Status                   int             `json:"status"`
	Challenge                string          `json:"challenge"`
	SDKResourceMetadataURL   *string         `json:"sdkResourceMetadataUrl"`
	NamedResourceMetadataURL string          `json:"namedResourceMetadataUrl"`
	Probed                   prmMetadata     `json:"probed"`
	FromChallenge            json.RawMessage `json:"fromChallenge"`
	SelectedResource         string          `json:"selectedResource"`
}

type prmMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
	Proofs                 []string `json:"dialogtrust_wimse_proofs_supported"`
}

// checkPRM checks the SDK's reading of the metadata of serverURL, whose authorization
// server is as and whose proofs are proofs.
func checkPRM(t *testing.T, node, serverURL, metadataURL, as string, proofs []string) {
	t.Helper()
	kind, out := runJS(t, node, nil, "prm-discovery.mjs", serverURL)
	var r prmResult
	if err := json.Unmarshal(out, &r); err != nil || kind != "result" {
		t.Fatalf("%s %s: %v", kind, out, err)
	}
	if r.Status != http.StatusUnauthorized || r.Challenge != `WPT resource_metadata="`+metadataURL+`"` {
		t.Errorf("the first request: %d, WWW-Authenticate %q", r.Status, r.Challenge)
	}
	// What the SDK does not read: a challenge of another scheme than Bearer. If a
	// release starts reading it, docs/interop.md's RFC 9728 row is to be updated.
	if r.SDKResourceMetadataURL != nil {
		t.Errorf("the SDK now reads resource_metadata from a WPT challenge (%s): update docs/interop.md", *r.SDKResourceMetadataURL)
	}
	md := r.Probed
	if md.Resource != serverURL || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != as ||
		md.BearerMethodsSupported == nil || len(md.BearerMethodsSupported) != 0 || fmt.Sprint(md.Proofs) != fmt.Sprint(proofs) ||
		fmt.Sprint(md.ScopesSupported) != "[trip.book]" || md.ResourceName != "Hotel" {
		t.Errorf("the SDK discovered %+v", md)
	}
	var fromChallenge prmMetadata
	if err := json.Unmarshal(r.FromChallenge, &fromChallenge); err != nil || fmt.Sprint(fromChallenge) != fmt.Sprint(md) {
		t.Errorf("the URL the challenge names gave %s: %v", r.FromChallenge, err)
	}
	if r.SelectedResource != serverURL {
		t.Errorf("the SDK's resource indicator: %q, want %q", r.SelectedResource, serverURL)
	}
}

// A dialog.Receiver with its metadata handler mounted beside its Middleware.
func TestRFC9728DiscoveryTypeScriptSDKReceiver(t *testing.T) {
	node := jsSDKs(t)
	dom := testkit.NewDomain(t, "a.example", keys.ES256, testkit.NewClock(time.Now()))
	srv := httptest.NewUnstartedServer(nil)
	defer srv.Close()
	base := "http://" + srv.Listener.Addr().String()
	rc, err := dialog.NewReceiver(
		dialog.WithWPT(wpt.NewVerifier(dom.Validator(), wpt.WithAudiences(base+"/mcp"), wpt.WithReplay(store.NewMemory()))),
		dialog.WithResourceMetadata(dialog.ResourceMetadata{Resource: base + "/mcp", AuthorizationServers: []string{"https://tts.a.example"},
			ScopesSupported: []string{"trip.book"}, ResourceName: "Hotel"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	var appHits atomic.Int32
	mux := http.NewServeMux()
	path, h := rc.ResourceMetadataHandler()
	mux.Handle(path, h)
	mux.Handle("/mcp", rc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { appHits.Add(1) })))
	srv.Config.Handler = mux
	srv.Start()
	checkPRM(t, node, base+"/mcp", base+path, "https://tts.a.example", []string{"wpt"})
	if appHits.Load() != 0 {
		t.Fatalf("the handler ran %d times for unauthenticated requests", appHits.Load())
	}
}

// The `dialogtrust proxy` ingress with ingress.resource_metadata: it serves the
// document itself, and the application behind it is never asked.
func TestRFC9728DiscoveryTypeScriptSDKProxyIngress(t *testing.T) {
	node := jsSDKs(t)
	d := startJSDomain(t)
	var appHits atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		appHits.Add(1)
		http.Error(w, "the application was asked", http.StatusTeapot)
	}))
	defer app.Close()
	port := strconv.Itoa(testkit.FreePort(t))
	base := "http://127.0.0.1:" + port
	yaml := d.common(jsHotelID) + fmt.Sprintf(`ingress:
  listen: 127.0.0.1:%[1]s
  upstream: %[2]s
  audiences: [%[3]q]
  txn_tokens: {jwks_url: %[4]s/.well-known/jwks.json}
  resource_metadata:
    authorization_servers: [%[4]s]
    scopes_supported: [trip.book]
    resource_name: Hotel
`, port, app.URL, base+"/mcp", d.ttsURL)
	urls := d.startProxy(t, "hotel ingress", yaml)
	if urls["ingress"] != base {
		t.Fatalf("the ingress listens at %s, want %s", urls["ingress"], base)
	}
	checkPRM(t, node, base+"/mcp", base+dialog.ResourceMetadataWellKnown+"/mcp", d.ttsURL, []string{"httpsig", "wpt"})
	if appHits.Load() != 0 {
		t.Fatalf("the application was asked %d times", appHits.Load())
	}
}
