package proxyservice

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// -check-config checks ingress.resource_metadata: the resource (given, or the first
// audience usable as one) and every URL of the document.
func TestProxyCheckConfigResourceMetadata(t *testing.T) {
	withMetadata := func(lines string) string { return checkedIngressYAML + "  resource_metadata:\n" + lines }
	for name, c := range map[string]struct{ yaml, want string }{
		"resource from audiences": {withMetadata("    authorization_servers: [https://tts.a.example]\n"), ""},
		"every member":            {withMetadata("    resource: https://t1.a.example/mcp\n    authorization_servers: [https://tts.a.example]\n    scopes_supported: [trip.book]\n    resource_name: Tool T1\n    documentation: https://t1.a.example/docs\n"), ""},
		"no usable audience":      {strings.Replace(withMetadata("    resource_name: x\n"), `audiences: ["https://t1.a.example/"]`, `audiences: ["t1", "https://t1.a.example/mcp/"]`, 1), "ingress.resource_metadata.resource: required"},
		"plain http resource":     {withMetadata("    resource: http://t1.a.example/mcp\n"), "ingress.resource_metadata.resource"},
		"resource with fragment":  {withMetadata("    resource: https://t1.a.example/mcp#x\n"), "ingress.resource_metadata.resource"},
		"issuer with query":       {withMetadata("    authorization_servers: [https://tts.a.example?x=1]\n"), "ingress.resource_metadata.authorization_servers[0]"},
		"issuer not a URL":        {withMetadata("    authorization_servers: [tts.a.example]\n"), "ingress.resource_metadata.authorization_servers[0]"},
		"documentation":           {withMetadata("    documentation: javascript:alert(1)\n"), "ingress.resource_metadata.documentation"},
		"scope":                   {withMetadata("    scopes_supported: [\"a b\"]\n"), "ingress.resource_metadata"},
		"unknown member":          {withMetadata("    jwks: x\n"), "jwks"},
		"at a trust boundary":     {strings.Replace(withMetadata("    resource_name: x\n"), "  require_txn_token: true\n", "", 1) + "  stateful: true\n  boundary: {access_tokens: {issuer: https://as.a.example, jwks_file: as.json}, tts_token_endpoint: https://tts.a.example/token}\n", "not with ingress.boundary"},
	} {
		expectCheckConfig(t, name, c.yaml, c.want)
	}
}

// The proxy command's ingress publishes ingress.resource_metadata at its well-known
// path and names it on its 401s.
func TestProxyCommandResourceMetadata(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	in := startProxy(t, ingressYAML(witURL, ttsURL, "http://127.0.0.1:1")+
		"  resource_metadata:\n    resource: https://t1.a.example/mcp\n    authorization_servers: ["+ttsURL+"]\n    resource_name: Tool T1\n")
	status, body := testkit.Get(t, in["ingress"]+"/.well-known/oauth-protected-resource/mcp")
	var md map[string]any
	if err := json.Unmarshal(body, &md); status != 200 || err != nil || md["resource"] != "https://t1.a.example/mcp" ||
		md["authorization_servers"].([]any)[0] != ttsURL || md["resource_name"] != "Tool T1" {
		t.Fatalf("%d %s", status, body)
	}
	res, err := http.Post(in["ingress"]+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if want := `WPT resource_metadata="https://t1.a.example/.well-known/oauth-protected-resource/mcp"`; res.StatusCode != 401 || res.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
}
