package ttsservice

import (
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// keysFileName is the file in the data directory that holds the signing keys.
const keysFileName = "tts-keys.json"

// openKeys returns the signing keys (keys.OpenRotator): a fixed key from a file (no
// rotation), rotated keys kept in a data directory, or, in a development configuration
// only, a generated key that dies with the process.
func openKeys(kc kit.KeysConfig, development bool, retain time.Duration, now func() time.Time) (*keys.Rotator, string, error) {
	src := keys.KeySource{SigningKeyFile: kc.SigningKeyFile, DataDir: kc.DataDir, StateFile: keysFileName}
	rc := keys.RotationConfig{Alg: kc.Alg, Period: kc.RotationPeriod, PublishDelay: kc.PublishDelay, Retain: retain, Now: now}
	if kc.SigningKeyFile != "" {
		rc.Period = 0 // a key from a file is rotated by replacing the file
	}
	if kc.SigningKeyFile == "" && kc.DataDir == "" && !development {
		return nil, "", fmt.Errorf("keys: signing_key_file or data_dir is required outside development mode")
	}
	r, origin, err := keys.OpenRotator(src, rc)
	switch origin {
	case keys.FromSigningKeyFile:
		return r, "file " + kc.SigningKeyFile, err
	case keys.GeneratedInDataDir, keys.LoadedFromDataDir:
		return r, "data_dir " + kc.DataDir, err
	case keys.GeneratedInMemory:
		return r, "generated at start (development; not kept)", err
	}
	return r, "", err
}
