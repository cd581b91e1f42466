package demo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvPrefix starts the variables of the env file that deploy/local/up.sh writes.
const EnvPrefix = "DIALOGTRUST_LOCAL_"

// ReadEnvFile reads an env file as deploy/local/up.sh writes it: NAME=VALUE lines
// (a value may be in single or double quotes, without escapes inside), blank lines and
// # comments. Only DIALOGTRUST_LOCAL_* names are kept.
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars, err := parseEnv(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vars, nil
}

func parseEnv(r io.Reader) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("line %d: not NAME=VALUE", n)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		if strings.HasPrefix(k, EnvPrefix) {
			vars[k] = v
		}
	}
	return vars, sc.Err()
}

// EnvFromEnviron picks the DIALOGTRUST_LOCAL_* variables out of an environment
// (os.Environ()), for a shell that sourced the env file.
func EnvFromEnviron(environ []string) map[string]string {
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, EnvPrefix) {
			vars[k] = v
		}
	}
	return vars
}

// LocalTopology is the External topology of a deploy/local deployment, from the
// variables of its env file: DIALOGTRUST_LOCAL_{A,B}_{TRUST_DOMAIN,WIT_ISSUER,TTS}
// (required), DIALOGTRUST_LOCAL_{A,B}_TTS_LOG (optional: the TTS's log file) and
// DIALOGTRUST_LOCAL_A_IDP and DIALOGTRUST_LOCAL_A_IDP_KEY (optional: domain A's identity
// provider and its private JWK file, for step 8).
func LocalTopology(vars map[string]string) (Topology, error) {
	var ds [2]Domain
	for i, d := range []string{"A", "B"} {
		p := EnvPrefix + d + "_"
		for _, k := range []string{"TRUST_DOMAIN", "WIT_ISSUER", "TTS"} {
			if vars[p+k] == "" {
				return nil, fmt.Errorf("%s%s is not set (is this the env file of deploy/local/up.sh?)", p, k)
			}
		}
		ds[i] = Domain{Name: vars[p+"TRUST_DOMAIN"], WITIssuer: vars[p+"WIT_ISSUER"], TTS: vars[p+"TTS"], TTSLog: vars[p+"TTS_LOG"],
			IdP: vars[p+"IDP"], IdPKeyFile: vars[p+"IDP_KEY"]}
	}
	return External(ds[0], ds[1])
}
