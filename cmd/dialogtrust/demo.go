package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/demo"
)

// demoRun runs the demo: by default with both trust domains in this process; with
// --local ENVFILE (or --local-env) against the wit-issuers and TTSs that
// deploy/local/up.sh started, whose URLs its env file holds. The workloads always run
// in this process.
func demoRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	local := fs.String("local", "", "env file written by deploy/local/up.sh ($DIALOGTRUST_LOCAL_DIR/env): run against that deployment")
	localEnv := fs.Bool("local-env", false, "like --local, with the DIALOGTRUST_LOCAL_* variables of this process's environment")
	asJSON := fs.Bool("json", false, "print the run as one JSON document (topology, hops, checks, summary) instead of text")
	reportFile := fs.String("report", "", "also write the run as a self-contained HTML `file` (the topology drawn as SVG, every hop and check)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{"unexpected argument " + fs.Arg(0)}
	}
	if *local != "" && *localEnv {
		return usageError{"--local and --local-env exclude each other"}
	}
	topo := demo.InProcess()
	if *local != "" || *localEnv {
		var vars map[string]string
		source := "--local-env"
		if *localEnv {
			vars = demo.EnvFromEnviron(os.Environ())
		} else {
			source = "--local"
			var err error
			if vars, err = demo.ReadEnvFile(*local); err != nil {
				return usageError{source + ": " + err.Error()}
			}
		}
		var err error
		if topo, err = demo.LocalTopology(vars); err != nil {
			return usageError{source + ": " + err.Error()}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// The report's file is opened before the run: one that cannot be written is a
	// usage error, found before anything runs.
	var page *os.File
	if *reportFile != "" {
		f, err := os.OpenFile(*reportFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return usageError{"--report: " + err.Error()}
		}
		defer f.Close()
		page = f
	}
	r, runErr := demo.Execute(ctx, topo)
	if page != nil {
		if err := writeReport(page, r); err != nil {
			return err
		}
	}
	write := demo.WriteText
	if *asJSON {
		write = demo.WriteJSON
	}
	if err := write(stdout, r); err != nil {
		return err
	}
	if runErr != nil {
		return silentFailure{runErr.Error()}
	}
	return nil
}

// writeReport writes the HTML report of r to f, also when the run failed: a failed
// run's report shows what failed.
func writeReport(f *os.File, r *demo.Report) error {
	var buf bytes.Buffer
	if err := demo.WriteHTML(&buf, r); err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}
