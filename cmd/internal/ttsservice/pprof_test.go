package ttsservice

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// /debug/pprof is absent by default: not on the service's listener, and no listener
// of its own.
func TestPprofOffByDefault(t *testing.T) {
	s := start(t, []string{"--listen", "127.0.0.1:0"}, []string{EnvPrefix + "WIT_JWKS_URL=http://127.0.0.1:1/jwks.json"})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/profile?seconds=1"} {
		if code := getJSON(t, s.URL+p, nil); code != http.StatusNotFound {
			t.Errorf("GET %s on the service's listener: %d, want 404", p, code)
		}
	}
	if strings.Contains(s.Stderr.String(), "pprof") {
		t.Errorf("a pprof listener was started without debug.pprof_listen:\n%s", s.Stderr.String())
	}
}

// With debug.pprof_listen (here through its environment override) the profiles are
// served on that loopback listener only, never on the service's.
func TestPprofOnItsOwnListener(t *testing.T) {
	s := start(t, []string{"--listen", "127.0.0.1:0"}, []string{EnvPrefix + "WIT_JWKS_URL=http://127.0.0.1:1/jwks.json", EnvPrefix + "PPROF_LISTEN=127.0.0.1:0"})
	m := regexp.MustCompile(`"url":"(http://127\.0\.0\.1:\d+/debug/pprof/)"`).FindStringSubmatch(s.Stderr.String())
	if m == nil {
		t.Fatalf("no pprof listener announced:\n%s", s.Stderr.String())
	}
	if code := getJSON(t, m[1]+"cmdline", nil); code != http.StatusOK {
		t.Errorf("GET %scmdline: %d", m[1], code)
	}
	if code := getJSON(t, s.URL+"/debug/pprof/", nil); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on the service's listener: %d, want 404", code)
	}
	if code := getJSON(t, strings.TrimSuffix(m[1], "debug/pprof/")+"token", nil); code != http.StatusNotFound {
		t.Errorf("the pprof listener serves the token endpoint: %d", code)
	}
}

// Only a loopback address is accepted, and a bad issued line level is refused.
func TestDebugConfigChecks(t *testing.T) {
	for _, env := range []string{EnvPrefix + "PPROF_LISTEN=0.0.0.0:6060", EnvPrefix + "PPROF_LISTEN=localhost:6060", EnvPrefix + "LOG_ISSUED_LEVEL=loud"} {
		cfg, _, err := configSpec.Load(nil, []string{env}, &testkit.SyncBuffer{})
		if err == nil {
			err = validate(cfg)
		}
		if err == nil {
			t.Errorf("%s: accepted", env)
		}
	}
}
