package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/dialogtrust/dialogtrust/wpt"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func wptNew(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("wpt new", stderr)
	keyFile := fs.String("key", "", "the workload's private JWK file (the WIT's key)")
	witArg := fs.String("wit", "", "the WIT (value, @file or -)")
	aud := fs.String("aud", "", "the target URI without query and fragment")
	txn := fs.String("txn-token", "", "Txn-Token value carried with the request")
	dc := fs.String("dialog-context", "", "Dialog-Context field value carried with the request")
	ttl := fs.Duration("ttl", wpt.DefaultTTL, "lifetime")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"key": *keyFile, "wit": *witArg, "aud": *aud}); err != nil {
		return err
	}
	k, err := loadPrivateKey(*keyFile, stdin)
	if err != nil {
		return err
	}
	w, err := readValue(*witArg, stdin)
	if err != nil {
		return err
	}
	proof, err := wpt.New(k, w, *aud, boundFromFlags(fs, *txn, *dc), wpt.WithTTL(*ttl))
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, proof+"\n")
	return err
}

func wptVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("wpt verify", stderr)
	trustFile := fs.String("trust", "", "JWKS file of the trusted WIT issuer keys")
	witArg := fs.String("wit", "", "the WIT (value, @file or -)")
	aud := fs.String("aud", "", "this recipient's URI")
	txn := fs.String("txn-token", "", "Txn-Token value carried with the request")
	dc := fs.String("dialog-context", "", "Dialog-Context field value carried with the request")
	now := fs.Int64("now", 0, "verify at this Unix time instead of the clock")
	skew := fs.Duration("skew", 30*time.Second, "allowed clock skew")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(map[string]string{"trust": *trustFile, "wit": *witArg, "aud": *aud}); err != nil {
		return err
	}
	proof, err := tokenArg(fs, stdin)
	if err != nil {
		return err
	}
	w, err := readValue(*witArg, stdin)
	if err != nil {
		return err
	}
	wits, err := witValidator(*trustFile, "", *now, *skew)
	if err != nil {
		return err
	}
	// No replay store: a one-shot command line check cannot remember jtis.
	res, err := wpt.NewVerifier(wits, wpt.WithAudiences(*aud)).Verify(context.Background(), w, proof, boundFromFlags(fs, *txn, *dc))
	if err != nil {
		return err
	}
	return writeJSON(stdout, map[string]any{"sub": res.WIT.Subject.String(), "wit": res.WIT.Claims, "wpt": res.Claims})
}

// boundFromFlags treats a flag as present when it was given, even with an empty value.
func boundFromFlags(fs interface{ Visit(func(f *flagT)) }, txn, dc string) wpt.Bound {
	var b wpt.Bound
	fs.Visit(func(f *flagT) {
		switch f.Name {
		case "txn-token":
			b.TxnToken = &txn
		case "dialog-context":
			b.DialogContext = &dc
		}
	})
	return b
}
