package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/conformance"
)

type flagT = flag.Flag

func conformanceRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	dir := fs.String("dir", "../shared/conformance/wimsey", "directory holding manifest.json")
	if err := parse(fs, args); err != nil {
		return err
	}
	rs, err := conformance.Run(*dir)
	if err != nil {
		return err
	}
	if failed := conformance.Print(stdout, rs); failed > 0 {
		return silentFailure{fmt.Sprintf("%d conformance cases failed", failed)}
	}
	return nil
}
