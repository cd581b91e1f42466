package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
)

// Issue 28: the MCP conformance suite (@modelcontextprotocol/conformance 0.1.16, the
// same pinned install as the server scenarios) plays the enterprise IdP, the MCP
// server's authorization server and the MCP server, and runs our client
// adapters/mcp/examples/idjag, built on chaining.Client, against them:
//
//   - auth/cross-app-access-complete-flow (SEP-990, the ID-JAG draft): the IdP's ID
//     token exchanged at the IdP for an ID-JAG (typ, audience, resource and client_id
//     checked by the suite's authorization server), redeemed with jwt-bearer and
//     client_secret_basic, the access token then carried on the MCP calls;
//   - auth/client-credentials-jwt (SEP-1046): client_credentials with private_key_jwt,
//     the assertion verified by the suite.
//
// Each must pass with no failure and no warning, the client must exit 0, and the
// checks that show the flow itself must be there as SUCCESS (a client that skipped the
// flow would leave them FAILURE, "Expected Check Missing" or absent). Without node 22
// or the suite the test skips, except under CI=true, where it fails.

// conformanceClientScenarios are the client scenarios the idjag client plays, with the
// checks that must have succeeded in each.
var conformanceClientScenarios = map[string][]string{
	"auth/cross-app-access-complete-flow": {"complete-flow-token-exchange", "complete-flow-jwt-bearer", "valid-bearer-token"},
	"auth/client-credentials-jwt":         {"client-credentials-jwt-verified", "valid-bearer-token"},
}

func TestMCPConformanceClientIDJAG(t *testing.T) {
	node := node22(t)
	bin := filepath.Join(t.TempDir(), "idjag")
	if _, err := proc.Run("go", "build", "-C", filepath.Join("..", "adapters", "mcp"), "-o", bin, "./examples/idjag"); err != nil {
		t.Fatalf("building the idjag client: %v", err)
	}
	for scenario, musts := range conformanceClientScenarios {
		t.Run(scenario, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, conformanceCLI, "client", "--command", bin, "--scenario", scenario, "-o", dir)
			cmd.Env = proc.BaseEnv()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			runErr := cmd.Run()
			t.Logf("conformance client --scenario %s: %v\n%s", scenario, runErr, tail(out.String(), 30))
			checks := readClientChecks(t, dir)
			// c.ErrorMessage is empty in the client scenarios: the description says it.
			status := map[string]string{}
			for _, c := range checks {
				switch c.Status {
				case "FAILURE", "WARNING":
					t.Errorf("check %s: %s %s", c.ID, c.Status, c.Description)
				}
				if status[c.ID] != "FAILURE" {
					status[c.ID] = c.Status
				}
			}
			for _, id := range musts {
				if status[id] != "SUCCESS" {
					t.Errorf("check %s is %q, want SUCCESS: the client did not do the flow", id, status[id])
				}
			}
			if runErr != nil {
				t.Errorf("the suite reports a failure (exit %v): a failed or missing check, a warning, or the client's non-zero exit", runErr)
			}
		})
	}
}

// clientCheck is a check of a client scenario as checks.json has it.
type clientCheck struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Description string `json:"description"`
}

// readClientChecks reads the one checks.json the suite wrote under dir.
func readClientChecks(t *testing.T, dir string) []clientCheck {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "checks.json" {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("want one checks.json under the suite's output directory, found %v", found)
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []clientCheck
	if err := json.Unmarshal(b, &checks); err != nil {
		t.Fatalf("checks.json: %v", err)
	}
	if len(checks) == 0 {
		t.Fatal("checks.json holds no check")
	}
	return checks
}
