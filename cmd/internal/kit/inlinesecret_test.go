package kit

import (
	"strings"
	"testing"
)

// A secret written into the YAML is refused wherever it stands, and the refusal names
// the member and the file and environment members to use instead.
func TestInlineSecretRefusedNamingTheMember(t *testing.T) {
	for yaml, want := range map[string][]string{
		"password: hunter2":                      {"store.redis.password:", "(password_file)", "(password_env)"},
		"sentinel: {password: hunter2}":          {"store.redis.sentinel.password:", "(store.redis.password_file)", "(store.redis.password_env)"},
		"sentinel: {sentinel_password: hunter2}": {"store.redis.sentinel.sentinel_password:", "(sentinel_password_file)", "(sentinel_password_env)"},
	} {
		var c struct {
			Redis RedisConfig `yaml:"redis"`
		}
		err := ParseYAML([]byte("redis: {"+yaml+"}\n"), &c)
		if err == nil {
			t.Errorf("%s: accepted", yaml)
			continue
		}
		for _, w := range append(want, "never written in the configuration") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q in it", yaml, err, w)
			}
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the refusal shows the secret: %v", yaml, err)
		}
	}
}
