package ttsservice

import (
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// keysFileName is the file in the data directory that holds the signing keys.
const keysFileName = "tts-keys.json"

// keysSpec is what the TTS's keys section opens (kit.OpenKeys), and the words the start
// log line says for where its keys live: a fixed key from a file (no rotation: a
// rotation_period beside it is ignored, the file is rotated by replacing it), rotated
// keys kept in a data directory, the ring "tts" in the store's Redis (keys.shared), or,
// in a development configuration only (validate refuses it elsewhere), a generated key
// that dies with the process.
func keysSpec(retain time.Duration) kit.KeysSpec {
	return kit.KeysSpec{Name: "tts", StateFile: keysFileName, Retain: retain, FileIgnoresPeriod: true, Now: time.Now,
		Describe: func(origin keys.KeyOrigin, kc kit.KeysConfig) string {
			switch origin {
			case keys.FromSigningKeyFile:
				return "file " + kc.SigningKeyFile
			case keys.GeneratedInDataDir, keys.LoadedFromDataDir:
				return "data_dir " + kc.DataDir
			case keys.GeneratedInMemory:
				return "generated at start (development; not kept)"
			}
			return ""
		}}
}
