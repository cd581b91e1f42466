package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/dialogtrust/dialogtrust/keys"
)

func keyGenerate(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("key generate", stderr)
	alg := fs.String("alg", "", "ES256, EdDSA or Ed25519")
	out := fs.String("out", "", "write the private JWK to FILE (mode 0600) instead of stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"alg": *alg}); err != nil {
		return err
	}
	k, err := keys.Generate(*alg)
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
	// Mode 0600 also when the file exists already with a wider one.
	return writePrivateJWK(*out, k)
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
