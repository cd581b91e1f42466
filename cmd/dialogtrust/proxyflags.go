package main

import (
	"flag"
	"io"
	"os"

	"github.com/dialogtrust/dialogtrust/cmd/internal/proxyservice"
)

// proxyConfigEnv names the configuration file when --config does not.
const proxyConfigEnv = proxyservice.EnvPrefix + "CONFIG"

// proxyFlags are the flags the service runner (cmd/internal/kit) reads for the proxy's
// program: --config and --check-config, which are the runner's, then the program's own.
// The command parses them first, for its help and its usage errors; the runner parses
// them again.
func proxyFlags(stderr io.Writer) *flag.FlagSet {
	fs := newFlags("proxy", stderr)
	fs.String("config", "", "`FILE`: the proxy's YAML configuration (docs/proxy.md); required, here or in "+proxyConfigEnv+": the proxy has no default configuration")
	fs.Bool("check-config", false, "check the configuration and exit 0, opening no listener, file, key or store")
	for _, f := range proxyservice.Program.Config.Flags {
		fs.String(f.Name, "", f.Usage)
	}
	return fs
}

// checkProxyArgs parses args with proxyFlags: a help request, a usage error, or nil.
// Without --config nor proxyConfigEnv there is nothing to run: a usage error, where the
// runner would refuse its empty default with "trust_domains: at least one is required".
func checkProxyArgs(args []string, stderr io.Writer) error {
	fs := proxyFlags(stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{"unexpected argument " + fs.Arg(0)}
	}
	if fs.Lookup("config").Value.String() == "" && os.Getenv(proxyConfigEnv) == "" {
		return usageError{"--config FILE is required (or " + proxyConfigEnv + "): the proxy has no default configuration"}
	}
	return nil
}
