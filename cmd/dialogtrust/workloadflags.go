package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
)

// workloadFlags are the flags of a command that asks a token endpoint as the workload,
// authenticating with its WIT and a proof of possession made with its key (txn
// request, chain grant, chain redeem): --wit, --key, --proof and --timeout, with one
// help text and one set of usage errors for all of them.
type workloadFlags struct {
	wit, key, proof *string
	timeout         *time.Duration
	defaultProof    proof.Method
	proofChoices    string // "httpsig or wpt", the default first
}

// addWorkloadFlags defines the workload's flags in fs; --proof defaults to defaultProof.
func addWorkloadFlags(fs *flag.FlagSet, defaultProof proof.Method) *workloadFlags {
	other := proof.WPT
	if defaultProof == proof.WPT {
		other = proof.HTTPSig
	}
	w := &workloadFlags{defaultProof: defaultProof, proofChoices: defaultProof.String() + " or " + other.String()}
	w.wit = fs.String("wit", "", "the WIT (value, @file or -)")
	w.key = fs.String("key", "", "the workload's private JWK file (the WIT's key)")
	w.proof = fs.String("proof", defaultProof.String(), "proof of possession: "+w.proofChoices)
	w.timeout = fs.Duration("timeout", 30*time.Second, "time allowed for the whole exchange")
	return w
}

// workload is what the workload's flags give: the proof method, the key and the WIT.
type workload struct {
	proof proof.Method
	key   *keys.PrivateKey
	wit   string
}

// read makes the last flag checks of these commands, in this order, and reads the
// workload's credentials: the proof method (empty is the default), no argument after
// the flags, then the key (--key) and the WIT (--wit).
func (w *workloadFlags) read(fs *flag.FlagSet, stdin io.Reader) (workload, error) {
	wl := workload{proof: w.defaultProof}
	var err error
	if *w.proof != "" {
		if wl.proof, err = proof.Parse(*w.proof); err != nil {
			return workload{}, usageError{fmt.Sprintf("--proof: %q is not a proof method (%s)", errcode.Cut(*w.proof), w.proofChoices)}
		}
	}
	if fs.NArg() > 0 {
		return workload{}, usageError{"unexpected argument " + fs.Arg(0)}
	}
	if wl.key, err = loadPrivateKey(*w.key, stdin); err != nil {
		return workload{}, err
	}
	if wl.wit, err = readValue(*w.wit, stdin); err != nil {
		return workload{}, err
	}
	return wl, nil
}

// exchange is the context and HTTP client of the whole exchange, both bounded by
// --timeout.
func (w *workloadFlags) exchange() (context.Context, context.CancelFunc, *http.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), *w.timeout)
	return ctx, cancel, &http.Client{Timeout: *w.timeout}
}
