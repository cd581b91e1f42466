package witissuerservice

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Two wit-issuer processes configured with keys.shared on one Redis serve one JWKS
// and sign with one key; a keys.shared without a Redis store does not start.
func TestSharedKeysTwoReplicas(t *testing.T) {
	addr := testkit.RedisAddr(t)
	secret := testkit.WriteTemp(t, "secret", "0123456789abcdef0123456789abcdef\n")
	prefix := "dialogtrust:test:wit-issuer-shared:" + time.Now().Format(time.RFC3339Nano) + ":"
	body := "trust_domains: [example.org]\nkeys: {shared: {secret_file: " + secret + "}}\n" +
		"store: {type: redis, redis: {addrs: [\"" + addr + "\"], prefix: \"" + prefix + "\"}}\n" +
		"auth: {dev: {prefixes: [\"wimse://example.org/\"]}}\nroutes: [{path: /v1/wit, methods: [dev]}]\n"
	conf := testkit.WriteTemp(t, "c.yaml", body)
	jwks := func(url string) []string { return testkit.JWKSKIDs(t, http.DefaultClient, url+witissuer.PathJWKS) }
	a := start(t, []string{"--config", conf, "--listen", "127.0.0.1:0"}, nil)
	defer a.Stop()
	b := start(t, []string{"--config", conf, "--listen", "127.0.0.1:0"}, nil)
	defer b.Stop()
	first, second := jwks(a.URL), jwks(b.URL)
	if len(first) != 1 || strings.Join(first, ",") != strings.Join(second, ",") {
		t.Fatalf("replicas serve %v and %v, want one shared key", first, second)
	}
	res, err := http.Get(a.URL + witissuer.PathReadyz)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("readyz of a replica that reads the shared ring: %d", res.StatusCode)
	}

	bad := testkit.WriteTemp(t, "bad.yaml", strings.Replace(body, "type: redis", "type: memory", 1))
	cfg, _, err := configSpec.Load([]string{"--config", bad}, nil, io.Discard)
	if err == nil {
		_, err = validate(cfg)
	}
	if err == nil || !strings.Contains(err.Error(), "store.type redis") {
		t.Fatalf("keys.shared with a memory store: %v", err)
	}
}
