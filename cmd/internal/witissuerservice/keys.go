package witissuerservice

import (
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// KeyringFile is the name of the key state in the data directory.
const KeyringFile = "keyring.json"

// keysSpec is what the issuer's keys section opens (kit.OpenKeys), and the word the
// start log line says for where its keys live:
//
//   - signing_key_file: that one key ("file"); rotation is refused (the file is the
//     operator's);
//   - data_dir: keyring.json, generated at first start (mode 0600 in a 0700 directory;
//     "generated"), reloaded on restart ("loaded"), rewritten on every rotation step;
//   - neither: a key generated in memory, lost at exit (the development default;
//     "memory");
//   - keys.shared: the ring "wit-issuer" in the store's Redis.
func keysSpec(retain time.Duration, now func() time.Time) kit.KeysSpec {
	return kit.KeysSpec{Name: "wit-issuer", StateFile: KeyringFile, Retain: retain, Now: now,
		Describe: func(origin keys.KeyOrigin, _ kit.KeysConfig) string {
			return map[keys.KeyOrigin]string{
				keys.FromSigningKeyFile: "file",
				keys.GeneratedInDataDir: "generated",
				keys.LoadedFromDataDir:  "loaded",
				keys.GeneratedInMemory:  "memory",
			}[origin]
		}}
}
