package witissuerservice

import (
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// KeyringFile is the name of the key state in the data directory.
const KeyringFile = "keyring.json"

// openKeys returns the issuer's Rotator and a word saying where its keys live
// (keys.OpenRotator):
//
//   - signing_key_file: that one key; rotation is refused (the file is the operator's);
//   - data_dir: keyring.json, generated at first start (mode 0600 in a 0700 directory),
//     reloaded on restart, rewritten on every rotation step;
//   - neither: a key generated in memory, lost at exit (the development default).
func openKeys(kc kit.KeysConfig, retain time.Duration, now func() time.Time) (*keys.Rotator, string, error) {
	rc := keys.RotationConfig{Alg: kc.Alg, PublishDelay: kc.PublishDelay, Retain: retain, Period: kc.RotationPeriod, Now: now}
	r, origin, err := keys.OpenRotator(keys.KeySource{SigningKeyFile: kc.SigningKeyFile, DataDir: kc.DataDir, StateFile: KeyringFile}, rc)
	from := map[keys.KeyOrigin]string{
		keys.FromSigningKeyFile: "file",
		keys.GeneratedInDataDir: "generated",
		keys.LoadedFromDataDir:  "loaded",
		keys.GeneratedInMemory:  "memory",
	}[origin]
	return r, from, err
}
