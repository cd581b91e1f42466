package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/keys"
	"golang.org/x/mod/sumdb/note"
)

// auditVerify: dialogtrust audit verify. It verifies a TTS's audit trail (package
// audit): the chain of each writer, every checkpoint's tree head and, with --key, its
// signature; a finding per line with its code (docs/errors.md), exit 1 on a finding, 2
// when a file or the JWKS cannot be read.
func auditVerify(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("audit verify", stderr)
	jwks := fs.String("key", "", "JWKS `FILE` of the service's signing keys (with its retired ones): checkpoint signatures are checked")
	var cps repeated
	fs.Var(&cps, "checkpoint", "`FILE` of checkpoint lines kept apart (the .checkpoint file beside the log, or a copy): a tail cut after it is found (repeatable)")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"audit verify needs the trail's files, oldest first"}
	}
	var vs note.Verifiers
	if *jwks != "" {
		set, err := keys.LoadJWKSFile(*jwks)
		if err != nil {
			return usageError{"--key: " + err.Error()}
		}
		if vs, err = audit.Verifiers(set.Keys()); err != nil {
			return usageError{"--key: " + err.Error()}
		}
	}
	open := func(paths []string) ([]audit.Input, func(), error) {
		var in []audit.Input
		var files []*os.File
		closeAll := func() {
			for _, f := range files {
				_ = f.Close()
			}
		}
		for _, p := range paths {
			f, err := os.Open(p)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			files = append(files, f)
			in = append(in, audit.Input{Name: p, R: f})
		}
		return in, closeAll, nil
	}
	inputs, closeInputs, err := open(fs.Args())
	if err != nil {
		return err
	}
	defer closeInputs()
	kept, closeKept, err := open(cps)
	if err != nil {
		return err
	}
	defer closeKept()
	rep, err := audit.Verify(inputs, kept, vs)
	if err != nil {
		return usageError{err.Error()}
	}
	if rep.Findings == nil {
		rep.Findings = []audit.Finding{}
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
	} else {
		for _, f := range rep.Findings {
			fmt.Fprintln(stdout, f.String())
		}
		sigs := "signatures checked"
		if !rep.SignaturesChecked {
			sigs = "signatures NOT checked (no --key): anyone can recompute a chain"
		}
		verdict := "ok"
		if !rep.OK() {
			verdict = fmt.Sprintf("%d findings", len(rep.Findings))
		}
		fmt.Fprintf(stdout, "%s: %d records of %d writers, %d checkpoints (%d verified against the records), %s\n",
			verdict, rep.Records, rep.Writers, rep.Checkpoints, rep.CheckpointsVerified, sigs)
	}
	if !rep.OK() {
		return silentFailure{fmt.Sprintf("%d findings", len(rep.Findings))}
	}
	return nil
}
