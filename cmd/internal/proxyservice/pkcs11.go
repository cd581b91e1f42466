package proxyservice

import (
	"fmt"
	"log/slog"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// The proxy's own private keys, the workload's assertion key (workload.auth
// assertion) and its handoff key (handoff), come from a file (a private JWK:
// assertion_key_file, handoff.key_file) or from a PKCS#11 token (a pkcs11 member in
// place of the file, with the vocabulary of the services' keys.pkcs11 and the same
// opener, kit.OpenPKCS11Key). A key in a token is the one key pair under its label,
// created by the operator sensitive and not extractable; it signs in the token and
// never leaves it. Both are opened at start, once, so that a wrong PIN, a token or a
// label that is not there is refused before anything listens for agents
// (pkcs11_login_failed, pkcs11_unavailable, unknown_key).

// Default labels of the proxy's keys in a token ("dialogtrust-" and the name).
const (
	assertionKeyName = "proxy-assertion"
	handoffKeyName   = "proxy-handoff"
)

// checkKeySource checks that a key comes from exactly one of the file member and the
// pkcs11 section of section, and checks the pkcs11 section without opening it.
func checkKeySource(section, fileMember, file string, p *kit.PKCS11KeysConfig, name string) error {
	switch {
	case file != "" && p != nil:
		return fmt.Errorf("%s: %s and pkcs11 exclude each other", section, fileMember)
	case p != nil:
		return p.CheckKey(section+".pkcs11", name)
	case file == "":
		return fmt.Errorf("%s.%s: required with auth assertion (or %s.pkcs11)", section, fileMember, section)
	}
	return nil
}

// checkProxyKeys checks where the keys come from: workload.pkcs11 only with auth
// assertion, the handoff key from key_file or pkcs11 and the trust from trust_file.
func checkProxyKeys(cfg *Config) error {
	if cfg.Workload.PKCS11 != nil && cfg.Workload.Auth != "assertion" {
		return fmt.Errorf("workload.pkcs11: only with auth assertion (it holds the assertion key)")
	}
	h := cfg.Handoff
	if h == nil {
		return nil
	}
	if (h.KeyFile == "" && h.PKCS11 == nil) || h.TrustFile == "" {
		return fmt.Errorf("handoff: key_file and trust_file are required (or pkcs11 in place of key_file)")
	}
	return checkKeySource("handoff", "key_file", h.KeyFile, h.PKCS11, handoffKeyName)
}

// openProxyKeys opens the keys the configuration uses, the token's released when s
// closes, and says where each came from in the log (with its kid, which the trust
// documents of other agents must list).
func openProxyKeys(s *kit.Server, cfg *Config, logger *slog.Logger) error {
	w := &cfg.Workload
	if needsWIT(cfg) && w.Auth == "assertion" {
		k, err := openProxyKey(s, "workload", "assertion_key_file", w.AssertionKeyFile, w.PKCS11, assertionKeyName, logger)
		if err != nil {
			return err
		}
		w.assertionKey = k
	}
	if h := cfg.Handoff; h != nil {
		k, err := openProxyKey(s, "handoff", "key_file", h.KeyFile, h.PKCS11, handoffKeyName, logger)
		if err != nil {
			return err
		}
		h.key = k
	}
	return nil
}

func openProxyKey(s *kit.Server, section, fileMember, file string, p *kit.PKCS11KeysConfig, name string, logger *slog.Logger) (*keys.PrivateKey, error) {
	if p == nil {
		k, err := readPrivateKey(file)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", section, fileMember, err)
		}
		return k, nil
	}
	k, closeToken, err := kit.OpenPKCS11Key(*p, section+".pkcs11", name)
	if err != nil {
		return nil, err
	}
	s.OnClose(closeToken)
	logger.Info("key in a PKCS#11 token", "key", section, "kid", k.KID())
	return k, nil
}

// needsWIT reports whether the proxy holds a WIT of its own: for an egress, and for an
// ingress that signs its responses or crosses a trust boundary.
func needsWIT(cfg *Config) bool {
	return cfg.Egress != nil || (cfg.Ingress != nil && (cfg.Ingress.SignResponses || cfg.Ingress.Boundary != nil))
}
