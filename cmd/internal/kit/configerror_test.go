package kit

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

const locateYAML = `listen: 127.0.0.1:2
trust_domains: [a.example]
store:
  type: memroy
  redis:
    addrs: [r1]
wits:
  - {trust_domain: a.example, jwks_url: "http://x"}
  - trust_domain: b.example
    jwks_url: "ftp://y"
`

// locateConfig is testConfig with a list of keyed items.
type locateConfig struct {
	Test LocateBase `yaml:",inline"`
	WITs []struct {
		TrustDomain string `yaml:"trust_domain"`
		JWKSURL     string `yaml:"jwks_url"`
	} `yaml:"wits"`
}

// LocateBase is testConfig under an exported name, for the YAML decoder to inline.
type LocateBase = testConfig

func locateSpec() Spec[locateConfig] {
	t := testSpec()
	return Spec[locateConfig]{Name: t.Name, EnvPrefix: t.EnvPrefix, Default: t.Default, Env: CommonEnv[locateConfig](), Flags: t.Flags}
}

// TestIssue24Point4ConfigErrorLocated: a check's refusal that names a member is shown
// as the YAML parser's errors are, with the file, line and column of the value, the
// source lines and a caret; a member left out points at the member above it; a list
// item is found by its index or by its key; a value the environment or a flag set
// names the variable or the flag instead; a message that names no member of the file
// is left as it is.
func TestIssue24Point4ConfigErrorLocated(t *testing.T) {
	file := testkit.WriteTemp(t, "c.yaml", locateYAML)
	_, src, err := Load(locateSpec(), []string{"--config", file}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		msg        string
		line, col  int
		sourceLine string
	}{
		{`store.type "memroy": memory or redis`, 4, 9, "\n>  4 |   type: memroy\n"},
		{`store.redis.sentinel.master_name: missing`, 5, 3, "\n>  5 |   redis:\n"},
		{`wits[1].jwks_url: not http(s)`, 10, 15, "\n> 10 |     jwks_url: \"ftp://y\"\n"},
		{`wits[b.example].jwks_url: not http(s)`, 10, 15, "\n> 10 |     jwks_url: \"ftp://y\"\n"},
		{`trust_domains: at least one`, 2, 1, "\n>  2 | trust_domains: [a.example]\n"},
		{`wits[7]: no such item`, 7, 1, "\n>  7 | wits:\n"},
	} {
		inner := errors.New(c.msg)
		err := src.Locate(inner)
		ce, ok := errors.AsType[*ConfigError](err)
		if !ok || !errors.Is(err, inner) {
			t.Errorf("%s: %v is not a located ConfigError wrapping the check's error", c.msg, err)
			continue
		}
		head := fmt.Sprintf("%s: [%d:%d] %s\n", file, c.line, c.col, c.msg)
		caret := strings.Repeat(" ", c.col+6) + "^"
		if ce.Where != file || ce.Line != c.line || ce.Column != c.col || !strings.HasPrefix(err.Error(), head) ||
			!strings.Contains(err.Error(), c.sourceLine+caret+"\n") {
			t.Errorf("%s: got %+v\n%s\nwant the head %q, the line %q and the caret at column %d", c.msg, ce, err, head, c.sourceLine, c.col)
		}
	}
	for _, msg := range []string{"an egress section is required", "nothing: here", "listen2: x"} {
		if err := src.Locate(errors.New(msg)); err.Error() != msg {
			t.Errorf("%q located: %v", msg, err)
		}
	}
	if src.Locate(nil) != nil {
		t.Error("nil located")
	}

	// Set by the environment, then by a flag (which wins): no file line, the source named.
	_, src, err = Load(locateSpec(), []string{"--config", file}, []string{"T_STORE=memroy"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Locate(errors.New(`store.type "memroy": memory or redis`)); err.Error() != `environment variable T_STORE: store.type "memroy": memory or redis` {
		t.Errorf("env: %v", err)
	}
	_, src, err = Load(locateSpec(), []string{"--config", file, "--redis-addrs", "x"}, []string{"T_REDIS_ADDRS=y"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Locate(errors.New(`store.redis.addrs[0]: bad`)); err.Error() != `flag --redis-addrs: store.redis.addrs[0]: bad` {
		t.Errorf("flag: %v", err)
	}
	// The embedded default is a source like a file.
	_, src, _ = Load(locateSpec(), nil, nil, io.Discard)
	if err := src.Locate(errors.New("listen: bad")); !strings.HasPrefix(err.Error(), "embedded default: [1:9] listen: bad\n") {
		t.Errorf("default: %v", err)
	}
}

// Run locates what Check refuses, with --check-config and without.
func TestIssue24Point4RunLocatesCheck(t *testing.T) {
	var built int
	var closed bool
	file := testkit.WriteTemp(t, "c.yaml", "trust_domains: [a.example]\nlisten: ''\n")
	for _, args := range [][]string{{"--check-config", "--config", file}, {"--config", file}} {
		err := Run(t.Context(), testProgram(&built, &closed), args, nil, io.Discard, io.Discard, nil)
		if err == nil || !strings.HasPrefix(err.Error(), file+": [2:9] listen: required\n") || built != 0 {
			t.Errorf("%v: %v (built %d)", args, err, built)
		}
	}
}

// A program without a default configuration (the proxy) says so in --config's usage
// and refuses to run without one, naming the flag and the variable.
func TestIssue24Point4NoDefaultConfig(t *testing.T) {
	spec := testSpec()
	spec.Default = nil
	var usage strings.Builder
	_, _, _ = Load(spec, []string{"-h"}, nil, &usage)
	if strings.Contains(usage.String(), "embedded") || !strings.Contains(usage.String(), "required (or T_CONFIG): svc has no default configuration") {
		t.Errorf("usage: %s", usage.String())
	}
	if _, _, err := Load(spec, nil, nil, io.Discard); err == nil || err.Error() != "--config FILE is required (or T_CONFIG): svc has no default configuration" {
		t.Errorf("no file: %v", err)
	}
}
