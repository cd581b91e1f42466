package main

import (
	"context"
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
	if err := demo.RunTopology(ctx, stdout, topo); err != nil {
		return silentFailure{err.Error()}
	}
	return nil
}
