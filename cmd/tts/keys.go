package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
)

// keysFileName is the file in the data directory that holds the signing keys.
const keysFileName = "tts-keys.json"

// keyRecordJSON is one key in the data directory: the private JWK and its life.
type keyRecordJSON struct {
	JWK         json.RawMessage `json:"jwk"`
	PublishedAt time.Time       `json:"published_at"`
	ActivatedAt *time.Time      `json:"activated_at,omitempty"`
	RetireAt    *time.Time      `json:"retire_at,omitempty"`
}

// openKeys returns the signing keys: a fixed key from a file (no rotation), rotated keys
// kept in a data directory, or, in a development configuration only, a generated key
// that dies with the process.
func openKeys(kc KeysConfig, development bool, retain time.Duration, now func() time.Time) (*tts.Rotator, string, error) {
	alg := kc.Alg
	if alg == "" {
		alg = keys.ES256
	}
	rc := tts.RotationConfig{Alg: alg, Period: kc.RotationPeriod, PublishDelay: kc.PublishDelay, Retain: retain, Now: now}
	switch {
	case kc.SigningKeyFile != "" && kc.DataDir != "":
		return nil, "", fmt.Errorf("keys: signing_key_file and data_dir exclude each other")
	case kc.SigningKeyFile != "":
		b, err := os.ReadFile(kc.SigningKeyFile)
		if err != nil {
			return nil, "", fmt.Errorf("keys.signing_key_file: %w", err)
		}
		k, err := keys.ParsePrivateJWK(b)
		if err != nil {
			return nil, "", fmt.Errorf("keys.signing_key_file: %w", err)
		}
		rc.Period = 0 // a key from a file is rotated by replacing the file
		r, err := tts.NewStaticRotator(k, rc)
		return r, "file " + kc.SigningKeyFile, err
	case kc.DataDir != "":
		if err := os.MkdirAll(kc.DataDir, 0o700); err != nil {
			return nil, "", fmt.Errorf("keys.data_dir: %w", err)
		}
		path := filepath.Join(kc.DataDir, keysFileName)
		rc.Save = func(rs []tts.KeyRecord) error { return saveRecords(path, rs) }
		records, err := loadRecords(path)
		if err != nil {
			return nil, "", err
		}
		if len(records) == 0 {
			k, err := keys.Generate(alg)
			if err != nil {
				return nil, "", err
			}
			t := now()
			records = []tts.KeyRecord{{Key: k, PublishedAt: t, ActivatedAt: t}}
			if err := saveRecords(path, records); err != nil {
				return nil, "", err
			}
		}
		r, err := tts.NewRotator(records, rc)
		return r, "data_dir " + kc.DataDir, err
	case development:
		k, err := keys.Generate(alg)
		if err != nil {
			return nil, "", err
		}
		r, err := tts.NewStaticRotator(k, rc)
		return r, "generated at start (development; not kept)", err
	}
	return nil, "", fmt.Errorf("keys: signing_key_file or data_dir is required outside development mode")
}

func loadRecords(path string) ([]tts.KeyRecord, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("keys.data_dir: %w", err)
	}
	var raw []keyRecordJSON
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]tts.KeyRecord, 0, len(raw))
	for _, r := range raw {
		k, err := keys.ParsePrivateJWK(r.JWK)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rec := tts.KeyRecord{Key: k, PublishedAt: r.PublishedAt}
		if r.ActivatedAt != nil {
			rec.ActivatedAt = *r.ActivatedAt
		}
		if r.RetireAt != nil {
			rec.RetireAt = *r.RetireAt
		}
		out = append(out, rec)
	}
	return out, nil
}

// saveRecords writes the keys atomically (temporary file, then rename), readable by the
// owner only: they are private keys.
func saveRecords(path string, rs []tts.KeyRecord) error {
	raw := make([]keyRecordJSON, 0, len(rs))
	for _, r := range rs {
		j, err := json.Marshal(r.Key)
		if err != nil {
			return err
		}
		rec := keyRecordJSON{JWK: j, PublishedAt: r.PublishedAt}
		if !r.ActivatedAt.IsZero() {
			t := r.ActivatedAt
			rec.ActivatedAt = &t
		}
		if !r.RetireAt.IsZero() {
			t := r.RetireAt
			rec.RetireAt = &t
		}
		raw = append(raw, rec)
	}
	b, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tts-keys-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
