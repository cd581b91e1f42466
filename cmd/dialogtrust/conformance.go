package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/conformance"
)

type flagT = flag.Flag

func conformanceRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	dir := fs.String("dir", "", "directory holding manifest.json (default: the wimsey vectors built into this command)")
	if err := parse(fs, args); err != nil {
		return err
	}
	vectors := conformance.Vectors()
	if *dir != "" {
		if st, err := os.Stat(*dir); err != nil {
			return usageError{"--dir: " + err.Error()}
		} else if !st.IsDir() {
			return usageError{"--dir: " + *dir + " is not a directory"}
		}
		vectors = os.DirFS(*dir)
	}
	rs, err := conformance.RunFSProgress(vectors, func(done, total int, file string) {
		fmt.Fprintf(stderr, "conformance: [%d/%d] %s\n", done+1, total, file)
	})
	if err != nil {
		if *dir != "" {
			// The set that --dir names is unusable (no manifest, a wrong format, an
			// unlisted file): a mistake in the command line, not a rejection.
			return usageError{"--dir " + *dir + ": " + err.Error()}
		}
		return err
	}
	if failed := conformance.Print(stdout, rs); failed > 0 {
		return silentFailure{fmt.Sprintf("%d conformance cases failed", failed)}
	}
	return nil
}
