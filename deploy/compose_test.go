package deploy

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	goyaml "github.com/goccy/go-yaml"
)

// composeFile is the part of the Compose specification that deploy/compose uses. It is
// decoded strictly: a member this struct does not know is an error, so the test sees
// every setting the file makes (and a misspelt one cannot hide).
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]struct{}       `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Tmpfs       []string          `yaml:"tmpfs"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	User        string   `yaml:"user"`
	ReadOnly    bool     `yaml:"read_only"`
	CapDrop     []string `yaml:"cap_drop"`
	SecurityOpt []string `yaml:"security_opt"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
	Restart string `yaml:"restart"`
}

// The dialogtrust services of the compose file and what they run.
var composeServices = map[string]string{
	"wit-issuer-a": "wit-issuer", "tts-a": "tts",
	"wit-issuer-b": "wit-issuer", "tts-b": "tts",
}

// TestCompose decodes deploy/compose/compose.yaml strictly and checks it against the
// rest of the kit: two trust domains (a wit-issuer and a TTS each) and Redis; images
// built from deploy/docker; every container non-root, read-only, without capabilities
// or privilege escalation; ports published on loopback only, mapped to the port the
// mounted configuration listens on; every configuration file accepted by the real
// cmd/wit-issuer or cmd/tts (-check-config, with the service's environment); the Redis
// addresses and JWKS URLs in them naming services and ports of this file.
func TestCompose(t *testing.T) {
	const dir = "compose"
	b, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := goyaml.UnmarshalWithOptions(b, &cf, goyaml.Strict(), goyaml.DisallowUnknownField()); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var names []string
	for n := range cf.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"redis", "tts-a", "tts-b", "wit-issuer-a", "wit-issuer-b"}; !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	root := repoRoot(t)

	// listens maps "service:port" for every port a service listens on inside the network.
	listens := map[string]bool{"redis:6379": true}
	configs := map[string]serviceConfig{}
	for name, bin := range composeServices {
		s := cf.Services[name]
		if s.Build == nil {
			t.Fatalf("%s: no build section; the image must be built from deploy/docker", name)
		}
		ctx := filepath.Join(dir, s.Build.Context)
		if abs, _ := filepath.Abs(ctx); abs != root {
			t.Errorf("%s: build context %s is not the repository root", name, s.Build.Context)
		}
		if want := "deploy/docker/" + bin + ".Dockerfile"; s.Build.Dockerfile != want {
			t.Errorf("%s: dockerfile %s, want %s", name, s.Build.Dockerfile, want)
		}
		if len(s.Command) != 2 || s.Command[0] != "--config" {
			t.Fatalf("%s: command %q, want [--config FILE]", name, s.Command)
		}
		var source string
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) == 3 && parts[1] == s.Command[1] {
				if parts[2] != "ro" {
					t.Errorf("%s: the configuration is mounted %q, want read-only", name, v)
				}
				source = filepath.Join(dir, parts[0])
			}
			// A named volume must be declared at the top.
			if !strings.HasPrefix(parts[0], ".") && !strings.HasPrefix(parts[0], "/") {
				if _, ok := cf.Volumes[parts[0]]; !ok {
					t.Errorf("%s: volume %s is not declared", name, parts[0])
				}
			}
		}
		if source == "" {
			t.Fatalf("%s: nothing is mounted at %s", name, s.Command[1])
		}
		if err := checkConfig(t, bin, source, s.Environment); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		cfg := readServiceConfig(t, source)
		configs[name] = cfg
		port := cfg.listenPort(t)
		listens[name+":"+strconv.Itoa(port)] = true
		if len(s.Ports) != 1 {
			t.Errorf("%s: ports %q, want one", name, s.Ports)
		} else {
			p := strings.Split(s.Ports[0], ":")
			if len(p) != 3 || p[0] != "127.0.0.1" || p[2] != strconv.Itoa(port) {
				t.Errorf("%s: port %q, want 127.0.0.1:<host port>:%d (loopback only, to the configured listen port)", name, s.Ports[0], port)
			}
			// Clients on the host discover the service at the published port, so the
			// issuer identifier must be that URL.
			if want := "http://127.0.0.1:" + p[1]; len(p) == 3 && cfg.str("issuer") != want {
				t.Errorf("%s: issuer %q, want %q (the published URL)", name, cfg.str("issuer"), want)
			}
		}
		if _, ok := s.DependsOn["redis"]; !ok {
			t.Errorf("%s: does not depend on redis", name)
		}
		for dep := range s.DependsOn {
			if _, ok := cf.Services[dep]; !ok {
				t.Errorf("%s: depends on unknown service %s", name, dep)
			}
		}
	}
	for name, s := range cf.Services {
		if s.User == "" || strings.HasPrefix(s.User, "0") || strings.HasPrefix(s.User, "root") {
			t.Errorf("%s: user %q, want a non-root uid:gid", name, s.User)
		}
		if !s.ReadOnly {
			t.Errorf("%s: the root file system is writable (read_only: true)", name)
		}
		if !slices.Equal(s.CapDrop, []string{"ALL"}) {
			t.Errorf("%s: cap_drop %q, want [ALL]", name, s.CapDrop)
		}
		if !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: security_opt %q lacks no-new-privileges:true", name, s.SecurityOpt)
		}
	}
	if len(cf.Services["redis"].Ports) != 0 {
		t.Error("redis publishes a port; only the services may reach it")
	}

	for name, cfg := range configs {
		for _, a := range cfg.get("store", "redis", "addrs").([]any) {
			if !listens[a.(string)] {
				t.Errorf("%s: store.redis.addrs %v is not a service port of this file", name, a)
			}
		}
		wits, _ := cfg.get("wits").([]any)
		for _, w := range wits {
			u, err := url.Parse(w.(map[string]any)["jwks_url"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if !listens[u.Host] {
				t.Errorf("%s: jwks_url %s is not a service port of this file", name, u)
			}
			host, _, _ := net.SplitHostPort(u.Host)
			if domain := name[len(name)-1:]; host != "wit-issuer-"+domain {
				t.Errorf("%s trusts WITs from %s, not from its own domain's wit-issuer", name, host)
			}
		}
	}
}
