package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

func keyGenerate(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("key generate", stderr)
	alg := fs.String("alg", "", "ES256, EdDSA or Ed25519")
	out := fs.String("out", "", "write the private JWK to a new `FILE` (mode 0600) instead of stdout")
	force := fs.Bool("force", false, "with --out: replace FILE if it exists (it may hold another private key)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"alg": *alg}); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{"unexpected argument " + fs.Arg(0)}
	}
	k, err := generateKey("alg", *alg)
	if err != nil {
		return err
	}
	if *out == "" {
		b, err := json.Marshal(k)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	}
	if st, err := os.Stat(filepath.Dir(*out)); err != nil {
		return usageError{"--out: " + err.Error()}
	} else if !st.IsDir() {
		return usageError{"--out: " + filepath.Dir(*out) + " is not a directory"}
	}
	if !*force {
		// A private key is not overwritten by mistake: the file is created here, or the
		// command fails and leaves it as it was.
		return createPrivateJWK(*out, k)
	}
	// Mode 0600 also when the file exists already with a wider one.
	return writePrivateJWK(*out, k)
}

// generateKey makes a key for alg, the value of --flag: an algorithm it cannot make a
// key for is a bad flag value, a usage error.
func generateKey(flag, alg string) (*keys.PrivateKey, error) {
	k, err := keys.Generate(alg)
	if errors.Is(err, errcode.New(errcode.UnsupportedAlg, "")) {
		return nil, usageError{fmt.Sprintf("--%s: %q is not an algorithm a key can be made for (ES256, EdDSA or Ed25519)", flag, errcode.Cut(alg))}
	}
	return k, err
}

// createPrivateJWK writes key to path, mode 0600, only if path does not exist: that an
// existing file is refused is a usage error naming --out and --force.
func createPrivateJWK(path string, key *keys.PrivateKey) error {
	b, err := json.Marshal(key)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return usageError{"--out: " + path + " exists; it may hold a private key: give --force to replace it"}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path) // not a half-written key
	}
	return err
}

func keyPublic(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("key public", stderr)
	in := fs.String("in", "", "private JWK file (default: stdin)")
	if err := parse(fs, args); err != nil {
		return err
	}
	k, err := loadPrivateKey(*in, stdin)
	if err != nil {
		return err
	}
	return writeJSON(stdout, k.Public())
}

func loadPrivateKey(path string, stdin io.Reader) (*keys.PrivateKey, error) {
	var (
		b   []byte
		err error
	)
	if path == "" || path == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, 64<<10))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	return keys.ParsePrivateJWK(b)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
