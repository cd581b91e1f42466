package kit

import (
	"context"
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// CheckShared validates keys.shared against the rest of the configuration without
// opening anything: it needs store.type redis, excludes signing_key_file and data_dir,
// takes exactly one of secret_file and secret_env, and needs a publish delay longer
// than the reload interval (step) plus the verifiers' JWKS cache time (jwks_max_age),
// so that every replica serves a key for a whole cache time before any signs with it.
// A negative jwks_max_age is refused with or without keys.shared. keys.pkcs11 is
// checked here too (checkPKCS11).
func (kc KeysConfig) CheckShared(sc StoreConfig, step time.Duration) error {
	if kc.JWKSMaxAge < 0 {
		return fmt.Errorf("keys.jwks_max_age %s is negative", kc.JWKSMaxAge)
	}
	if err := kc.checkPKCS11(step); err != nil {
		return err
	}
	sh := kc.Shared
	if sh == nil {
		return nil
	}
	if kc.SigningKeyFile != "" || kc.DataDir != "" {
		return fmt.Errorf("keys.shared excludes keys.signing_key_file and keys.data_dir")
	}
	if sc.Type != "redis" {
		return fmt.Errorf("keys.shared needs store.type redis (the ring lives in the store's Redis)")
	}
	if (sh.SecretFile == "") == (sh.SecretEnv == "") {
		return fmt.Errorf("keys.shared: exactly one of secret_file and secret_env")
	}
	return kc.checkPublishDelay(step, "keys.shared")
}

// checkPublishDelay: with keys several replicas share (keys.shared, keys.pkcs11), a
// replica signs with a new key only after keys.publish_delay, which must exceed the
// rotation step (how late another replica may load the key) plus the JWKS cache time
// (how late a verifier may fetch it); section names the keys section in the refusal.
func (kc KeysConfig) checkPublishDelay(step time.Duration, section string) error {
	delay := kc.PublishDelay
	if delay <= 0 {
		delay = keys.DefaultPublishDelay
	}
	if maxAge := kc.jwksMaxAge(); delay <= step+maxAge {
		return fmt.Errorf("keys.publish_delay %s must exceed the rotation step %s plus the JWKS cache time %s with %s", delay, step, maxAge, section)
	}
	return nil
}

// SharedKeysEnv binds the environment overrides of keys.shared, KEYS_SHARED_SECRET_FILE
// and KEYS_SHARED_SECRET_ENV (after the service's prefix), for a configuration whose
// keys section keysOf returns. Either one switches keys.shared on with that secret
// source and drops the other source a file may name (the section takes exactly one);
// an empty value is an error.
func SharedKeysEnv[C any](keysOf func(*C) *KeysConfig) []EnvVar[C] {
	set := func(field func(*SharedKeysConfig) *string) func(*C, string) error {
		return func(cfg *C, v string) error {
			if v == "" {
				return fmt.Errorf("empty: unset the variable to keep the file's keys section")
			}
			sh := &SharedKeysConfig{}
			*field(sh) = v
			keysOf(cfg).Shared = sh
			return nil
		}
	}
	return []EnvVar[C]{
		{Name: "KEYS_SHARED_SECRET_FILE", Set: set(func(sh *SharedKeysConfig) *string { return &sh.SecretFile })},
		{Name: "KEYS_SHARED_SECRET_ENV", Set: set(func(sh *SharedKeysConfig) *string { return &sh.SecretEnv })},
	}
}

// jwksMaxAge is keys.jwks_max_age or its default.
func (kc KeysConfig) jwksMaxAge() time.Duration {
	if kc.JWKSMaxAge > 0 {
		return kc.JWKSMaxAge
	}
	return keys.DefaultJWKSMaxAge
}

// secret reads the secret of keys.shared (ReadSecret).
func (sh SharedKeysConfig) secret() ([]byte, error) {
	v, err := ReadSecret("keys.shared.secret", sh.SecretFile, sh.SecretEnv)
	return []byte(v), err
}

// OpenSharedKeys opens the Rotator of keys.shared (CheckShared first): the ring name
// (the service's, e.g. "tts") in the store's Redis, through the store's one client,
// under the store's prefix followed by "keyring:" (redisstore.DefaultKeyRingPrefix
// without one), encrypted under the configured secret (at least
// redisstore.MinKeyRingSecret bytes). The returned words say where the keys live, for
// the start log line.
func OpenSharedKeys(ctx context.Context, kc KeysConfig, st *Store, name string, step, retain time.Duration, now func() time.Time) (*keys.Rotator, string, error) {
	if err := kc.CheckShared(st.sc, step); err != nil {
		return nil, "", err
	}
	secret, err := kc.Shared.secret()
	if err != nil {
		return nil, "", err
	}
	var opts []redisstore.Option
	if st.sc.Redis.Prefix != "" {
		opts = append(opts, redisstore.WithPrefix(st.sc.Redis.Prefix+"keyring:"))
	}
	if st.sc.Redis.Timeout > 0 {
		opts = append(opts, redisstore.WithTimeout(st.sc.Redis.Timeout))
	}
	ring, err := redisstore.NewKeyRing(st.client, name, secret, opts...)
	if err != nil {
		return nil, "", err
	}
	rc := keys.RotationConfig{Alg: kc.Alg, Period: kc.RotationPeriod, PublishDelay: kc.PublishDelay, Retain: retain, Now: now}
	rot, err := keys.NewSharedRotator(ctx, ring, rc)
	if err != nil {
		return nil, "", err
	}
	rot.Ring().SetMaxAge(kc.JWKSMaxAge)
	return rot, "shared in redis", nil
}

// SharedKeysReady is the readiness check of a shared Rotator: it fails once the replica
// has not read the shared ring for the publish delay less the JWKS cache time (its
// Ring's MaxAge), since a key the other replicas sign with may then be missing from its
// JWKS, and its own active key may already be leaving theirs. A Rotator that is not
// shared is always ready here.
func SharedKeysReady(rot *keys.Rotator, now func() time.Time) service.ReadyCheck {
	if now == nil {
		now = time.Now
	}
	return func(context.Context) error {
		since, shared := rot.SharedSince()
		if !shared {
			return nil
		}
		if limit := rot.PublishDelay() - rot.Ring().MaxAge(); now().Sub(since) > limit {
			return fmt.Errorf("the shared key ring was last read at %s, more than %s ago", since.UTC().Format(time.RFC3339), limit)
		}
		return nil
	}
}
