package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KeySource says where a service's signing keys live: the keys.signing_key_file and
// keys.data_dir settings of the wit-issuer and the TTS.
type KeySource struct {
	// SigningKeyFile is one private JWK the operator manages; it is rotated by
	// replacing the file, never here.
	SigningKeyFile string
	// DataDir holds the rotated keys in StateFile (mode 0600, directory 0700).
	DataDir string
	// StateFile is the name of the key state in DataDir (the wit-issuer's keyring.json,
	// the TTS's tts-keys.json).
	StateFile string
}

// KeyOrigin says where OpenRotator found the keys.
type KeyOrigin int

// Where the keys came from.
const (
	FromSigningKeyFile KeyOrigin = iota + 1 // the one key of SigningKeyFile
	GeneratedInDataDir                      // generated at this first start, saved in DataDir
	LoadedFromDataDir                       // read from DataDir
	GeneratedInMemory                       // generated, lost at exit (development)
)

// OpenRotator returns the Rotator of src:
//
//   - SigningKeyFile: that one key; a rotation Period is refused, since the file is
//     the operator's;
//   - DataDir: StateFile, generated at first start (an active key of cfg.Alg) into a
//     0600 file in a 0700 directory, reloaded on restart, and rewritten atomically on
//     every change of the ring (before a new key signs: cfg.OnChange, when set, is
//     called after the file is written);
//   - neither: a key generated in memory, lost at exit. Whether that is allowed is the
//     service's decision, made before it calls.
//
// Setting both is refused.
func OpenRotator(src KeySource, cfg RotationConfig) (*Rotator, KeyOrigin, error) {
	alg := cfg.Alg
	if alg == "" {
		alg = ES256
	}
	switch {
	case src.SigningKeyFile != "" && src.DataDir != "":
		return nil, 0, fmt.Errorf("keys: signing_key_file and data_dir exclude each other")
	case src.SigningKeyFile != "":
		if cfg.Period > 0 {
			return nil, 0, fmt.Errorf("keys: rotation needs data_dir; a signing_key_file is rotated by replacing the file")
		}
		k, err := ReadPrivateKeyFile(src.SigningKeyFile)
		if err != nil {
			return nil, 0, fmt.Errorf("keys.signing_key_file: %w", err)
		}
		r, err := NewStaticRotator(k, cfg)
		return r, FromSigningKeyFile, err
	case src.DataDir != "":
		if src.StateFile == "" || filepath.Base(src.StateFile) != src.StateFile {
			return nil, 0, fmt.Errorf("keys.data_dir: state file name %q is not a plain file name", src.StateFile)
		}
		path := filepath.Join(src.DataDir, src.StateFile)
		then := cfg.OnChange
		cfg.OnChange = func(s RingState) error {
			if err := SaveRingState(path, s); err != nil {
				return err
			}
			if then != nil {
				return then(s)
			}
			return nil
		}
		if err := os.MkdirAll(src.DataDir, 0o700); err != nil {
			return nil, 0, fmt.Errorf("keys.data_dir: %w", err)
		}
		state, found, err := LoadRingState(path, cfg)
		if err != nil {
			return nil, 0, fmt.Errorf("keys.data_dir: %w", err)
		}
		origin := LoadedFromDataDir
		if !found {
			k, err := Generate(alg)
			if err != nil {
				return nil, 0, err
			}
			now := time.Now()
			if cfg.Now != nil {
				now = cfg.Now()
			}
			state = RingState{Keys: []KeyRecord{{Key: k, State: KeyActive, ActivatedAt: now}}}
			if err := SaveRingState(path, state); err != nil {
				return nil, 0, fmt.Errorf("keys.data_dir: %w", err)
			}
			origin = GeneratedInDataDir
		}
		r, err := NewRotator(state, cfg)
		return r, origin, err
	default:
		k, err := Generate(alg)
		if err != nil {
			return nil, 0, err
		}
		r, err := NewStaticRotator(k, cfg)
		return r, GeneratedInMemory, err
	}
}

// ReadPrivateKeyFile reads one private JWK from path (a signing_key_file).
func ReadPrivateKeyFile(path string) (*PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParsePrivateJWK(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// LoadRingState reads the key state saved at path. found is false when there is no
// file, or when the file holds no key at all (a fresh start).
//
// Besides the RingState object that SaveRingState writes, it reads the list of key
// records the TTS kept in tts-keys.json before it rotated through a Rotator
// (published_at, activated_at, retire_at): a key not yet activated is next, due
// cfg.PublishDelay after it was published; the last activated key is active; the others
// are retiring, at their retire_at or, without one, cfg.Retain from now. The file is
// rewritten in the RingState form at the first change.
func LoadRingState(path string, cfg RotationConfig) (state RingState, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return RingState{}, false, nil
	}
	if err != nil {
		return RingState{}, false, err
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		state, err = legacyRingState(t, cfg)
	} else {
		err = json.Unmarshal(b, &state)
	}
	if err != nil {
		return RingState{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return state, len(state.Keys) > 0, nil
}

// legacyRecord is one key of the TTS's tts-keys.json before the TTS used a Rotator.
type legacyRecord struct {
	JWK         json.RawMessage `json:"jwk"`
	PublishedAt time.Time       `json:"published_at"`
	ActivatedAt *time.Time      `json:"activated_at,omitempty"`
	RetireAt    *time.Time      `json:"retire_at,omitempty"`
}

func legacyRingState(b []byte, cfg RotationConfig) (RingState, error) {
	var raw []legacyRecord
	if err := json.Unmarshal(b, &raw); err != nil {
		return RingState{}, err
	}
	now := time.Now()
	if cfg.Now != nil {
		now = cfg.Now()
	}
	delay := cfg.PublishDelay
	if delay <= 0 {
		delay = DefaultPublishDelay
	}
	var activated, next []KeyRecord
	for _, r := range raw {
		k, err := ParsePrivateJWK(r.JWK)
		if err != nil {
			return RingState{}, err
		}
		switch {
		case r.RetireAt != nil && !now.Before(*r.RetireAt):
			// Retired before this start: it left the JWKS already.
		case r.ActivatedAt == nil:
			next = append(next, KeyRecord{Key: k, State: KeyNext, ActivateAt: r.PublishedAt.Add(delay)})
		default:
			rec := KeyRecord{Key: k, State: KeyRetiring, ActivatedAt: *r.ActivatedAt}
			if r.RetireAt != nil {
				rec.RetireAt = *r.RetireAt
			} else {
				rec.RetireAt = now.Add(cfg.Retain)
			}
			activated = append(activated, rec)
		}
	}
	if len(activated) == 0 {
		if len(next) > 0 {
			return RingState{}, fmt.Errorf("no activated signing key")
		}
		return RingState{}, nil
	}
	slices.SortStableFunc(activated, func(a, b KeyRecord) int { return a.ActivatedAt.Compare(b.ActivatedAt) })
	last := &activated[len(activated)-1]
	*last = KeyRecord{Key: last.Key, State: KeyActive, ActivatedAt: last.ActivatedAt}
	for i := range activated[:len(activated)-1] {
		activated[i].ActivatedAt = time.Time{}
	}
	return RingState{Keys: append(activated, next...)}, nil
}

// SaveRingState writes the key state atomically: a temporary file of mode 0600 in the
// same directory, synced, then renamed over the old one, so a crash leaves either
// state, never half of one, and the private keys are never readable by others.
func SaveRingState(path string, s RingState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return WritePrivateFile(path, b)
}

// WritePrivateFile writes b and a newline to path with mode 0600, also over an existing
// file (os.WriteFile would keep its wider mode): a temporary file of mode 0600 in the
// same directory, synced, then renamed over path, so a crash leaves the old content or
// the new, never half of either, and no one else can ever read the new.
func WritePrivateFile(path string, b []byte) error {
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	f, err := os.CreateTemp(filepath.Dir(path), "."+strings.TrimSuffix(base, ext)+"-*"+ext)
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
