// These tests check the layering docs/library.md's "Architecture" section describes: what
// each layer may import. They read the import graph with `go list`, so a change that
// breaks a rule fails here with the path that broke it.

package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/dialogtrust/dialogtrust"

// heavy are the modules a workload that only proves and verifies credentials must not
// link: the HTTP router, metrics, the Redis client and tracing belong to services.
var heavy = []string{
	"github.com/go-chi/",
	"github.com/prometheus/",
	"github.com/redis/go-redis/",
	"go.opentelemetry.io/",
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func list(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	args := append([]string{"list", "-json=ImportPath,Imports,Deps"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLibrariesLinkNoServiceModules: an agent that links the credential, dialog and
// handoff packages (or the proxy built on them) links no router, metrics, Redis or
// tracing module.
func TestLibrariesLinkNoServiceModules(t *testing.T) {
	light := []string{"./dialog", "./agent", "./wit", "./wpt", "./httpsig", "./handoff", "./txntoken",
		"./proof", "./oauth", "./chaining", "./jose", "./keys", "./identifier", "./errcode", "./problem", "./store", "./wic", "./proxy", "./tokenhash", "./hostproto"}
	for _, p := range list(t, light...) {
		for _, d := range p.Deps {
			for _, h := range heavy {
				if strings.HasPrefix(d, h) {
					t.Errorf("%s links %s", p.ImportPath, d)
				}
			}
		}
	}
}

// TestLayerImports: the identity-chaining authorization servers do not reach into the
// TTS or the WIT issuer, the WIT issuer not into the TTS, and the command line's
// applications (demo, conformance runner, load tool) are imported by nothing outside
// cmd/.
func TestLayerImports(t *testing.T) {
	forbidden := map[string][]string{
		module + "/chaining":  {module + "/tts", module + "/witissuer"},
		module + "/witissuer": {module + "/tts"},
		module + "/tts":       {module + "/witissuer", module + "/chaining"},
		// The proxy is built on the agent and receiver libraries; the command wires the
		// services' clients, the stores and the service runner into it.
		module + "/proxy": {module + "/tts", module + "/witissuer", module + "/internal/service", module + "/store/redisstore"},
	}
	apps := []string{"/internal/demo", "/internal/conformance", "/internal/loadtest"}
	for _, p := range list(t, "./...") {
		for _, bad := range forbidden[p.ImportPath] {
			for _, d := range p.Deps {
				if d == bad {
					t.Errorf("%s depends on %s", p.ImportPath, bad)
				}
			}
		}
		if strings.HasPrefix(p.ImportPath, module+"/cmd/") {
			continue
		}
		for _, imp := range p.Imports {
			for _, a := range apps {
				if strings.HasSuffix(imp, a) {
					t.Errorf("%s imports the application %s", p.ImportPath, imp)
				}
			}
		}
	}
}

// TestCommandsAreFlagsAndCommands (issue 23 point 1): the commands' package main holds
// flags and commands only; the service wiring (router, metrics, Redis) is the programs'
// under cmd/internal (kit, ttsservice, witissuerservice, proxyservice), so package main
// of cmd/dialogtrust, cmd/tts and cmd/wit-issuer imports no chi, Prometheus or Redis
// client.
func TestCommandsAreFlagsAndCommands(t *testing.T) {
	wiring := []string{"github.com/go-chi/", "github.com/prometheus/", "github.com/redis/go-redis/"}
	pkgs := list(t, "./cmd/dialogtrust", "./cmd/tts", "./cmd/wit-issuer")
	if len(pkgs) != 3 {
		t.Fatalf("go list found %d of the 3 commands", len(pkgs))
	}
	for _, p := range pkgs {
		if len(p.Imports) == 0 {
			t.Fatalf("%s: go list reports no imports", p.ImportPath)
		}
		for _, imp := range p.Imports {
			for _, w := range wiring {
				if strings.HasPrefix(imp, w) {
					t.Errorf("%s (package main) imports %s: wiring belongs to the programs under cmd/internal", p.ImportPath, imp)
				}
			}
		}
	}
}
