package archtest

import (
	"os"
	"strings"
	"testing"
)

// agentSDKs move fast; the core module must not follow them. Their adapters live in
// modules of their own (adapters/mcp, adapters/a2a), which the core never requires.
var agentSDKs = []string{
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/a2aproject/a2a-go",
}

func TestCoreModuleListsNoAgentSDK(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		for _, sdk := range agentSDKs {
			if strings.Contains(line, sdk) {
				t.Errorf("the core go.mod lists %s: %q", sdk, strings.TrimSpace(line))
			}
		}
	}
	for _, p := range list(t, "./...") {
		for _, dep := range append(p.Imports, p.Deps...) {
			for _, sdk := range agentSDKs {
				if strings.HasPrefix(dep, sdk) {
					t.Errorf("%s links %s", p.ImportPath, dep)
				}
			}
		}
	}
}
