package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// KeyringFile is the name of the key state in the data directory.
const KeyringFile = "keyring.json"

// openKeys returns the issuer's Rotator and a word saying where its keys live:
//
//   - signing_key_file: that one key; rotation is refused (the file is the operator's);
//   - data_dir: keyring.json, generated at first start (mode 0600 in a 0700 directory),
//     reloaded on restart, rewritten on every rotation step;
//   - neither: a key generated in memory, lost at exit (the development default).
func openKeys(kc KeysConfig, retain time.Duration, now func() time.Time) (*witissuer.Rotator, string, error) {
	rc := witissuer.RotationConfig{Alg: kc.Alg, PublishDelay: kc.PublishDelay, Retain: retain, Period: kc.RotationPeriod, Now: now}
	switch {
	case kc.SigningKeyFile != "" && kc.DataDir != "":
		return nil, "", fmt.Errorf("keys: signing_key_file and data_dir exclude each other")
	case kc.SigningKeyFile != "":
		if kc.RotationPeriod > 0 {
			return nil, "", fmt.Errorf("keys: rotation needs data_dir; a signing_key_file is rotated by replacing the file")
		}
		b, err := os.ReadFile(kc.SigningKeyFile)
		if err != nil {
			return nil, "", fmt.Errorf("keys: %w", err)
		}
		k, err := keys.ParsePrivateJWK(b)
		if err != nil {
			return nil, "", fmt.Errorf("keys: %s: %w", kc.SigningKeyFile, err)
		}
		r, err := witissuer.NewStaticRotator(k, rc)
		return r, "file", err
	case kc.DataDir != "":
		path := filepath.Join(kc.DataDir, KeyringFile)
		rc.OnChange = func(s witissuer.RingState) error { return saveKeyring(path, s) }
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(kc.DataDir, 0o700); err != nil {
				return nil, "", fmt.Errorf("keys: %w", err)
			}
			k, err := keys.Generate(alg(kc.Alg))
			if err != nil {
				return nil, "", err
			}
			state := witissuer.RingState{Keys: []witissuer.KeyRecord{{Key: k, State: witissuer.KeyActive, ActivatedAt: now()}}}
			if err := saveKeyring(path, state); err != nil {
				return nil, "", err
			}
			r, err := witissuer.NewRotator(state, rc)
			return r, "generated", err
		}
		if err != nil {
			return nil, "", fmt.Errorf("keys: %w", err)
		}
		var state witissuer.RingState
		if err := json.Unmarshal(b, &state); err != nil {
			return nil, "", fmt.Errorf("keys: %s: %w", path, err)
		}
		r, err := witissuer.NewRotator(state, rc)
		return r, "loaded", err
	default:
		k, err := keys.Generate(alg(kc.Alg))
		if err != nil {
			return nil, "", err
		}
		r, err := witissuer.NewStaticRotator(k, rc)
		return r, "memory", err
	}
}

func alg(a string) string {
	if a == "" {
		return keys.ES256
	}
	return a
}

// saveKeyring writes the key state atomically: a temporary file of mode 0600 in the same
// directory, synced, then renamed over the old one, so a crash leaves either state,
// never half of one, and the private keys are never readable by others.
func saveKeyring(path string, s witissuer.RingState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".keyring-*.json")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
