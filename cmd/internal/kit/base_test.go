package kit

import (
	"io"
	"strings"
	"testing"
	"time"
)

// Base is inlined: its members sit at the top of the file, strictly (a typo in them
// is still an error), and the environment and flags reach them.
func TestBaseInlined(t *testing.T) {
	spec := testSpec()
	spec.Default = []byte("listen: 127.0.0.1:1\nlog: {level: debug}\nskew: 5s\ntrust_domains: [a]\ntracing: {otlp_endpoint: http://c:4318}\n")
	cfg, _, err := Load(spec, nil, []string{"T_LOG_LEVEL=warn"}, io.Discard)
	if err != nil || cfg.Listen != "127.0.0.1:1" || cfg.Log.Level != "warn" || cfg.Skew != 5*time.Second || cfg.Tracing.OTLPEndpoint != "http://c:4318" {
		t.Fatalf("%v %+v", err, cfg)
	}
	for _, bad := range []string{"log: {levl: debug}\n", "skw: 5s\n"} {
		spec.Default = []byte(bad)
		if _, _, err := Load(spec, nil, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "embedded default") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestBaseDefaultsAndCheck(t *testing.T) {
	var b Base
	b.SetDefaults("127.0.0.1:8080", time.Minute)
	if b.Listen != "127.0.0.1:8080" || b.Skew != time.Minute || b.ShutdownTimeout != DefaultShutdownTimeout {
		t.Fatalf("%+v", b)
	}
	own := Base{Listen: "127.0.0.1:1", Skew: time.Second, ShutdownTimeout: time.Second}
	own.SetDefaults("127.0.0.1:8080", time.Minute)
	if own.Listen != "127.0.0.1:1" || own.Skew != time.Second || own.ShutdownTimeout != time.Second {
		t.Fatalf("%+v", own)
	}
	if err := b.Check(); err == nil || !strings.Contains(err.Error(), "trust_domains") {
		t.Fatalf("no trust domain: %v", err)
	}
	b.TrustDomains = []string{"a"}
	b.Tracing.OTLPEndpoint = "not a url"
	if err := b.Check(); err == nil {
		t.Fatal("bad tracing endpoint accepted")
	}
	b.Tracing.OTLPEndpoint = ""
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
}
