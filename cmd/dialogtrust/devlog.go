package main

import (
	"os"

	"golang.org/x/term"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// devLogFormat is the format of the services' logs under dev: --log-format when given
// (text or json), else text when they go to a terminal (people read them there) and
// json when not (a file or a pipe: a log collector reads them).
func devLogFormat(flagValue string, terminal bool) (string, error) {
	switch flagValue {
	case kit.LogText, kit.LogJSON:
		return flagValue, nil
	case "":
		if terminal {
			return kit.LogText, nil
		}
		return kit.LogJSON, nil
	}
	return "", usageError{"--log-format " + flagValue + ": text or json"}
}

// stderrIsTerminal says whether the services' logs, on dev's standard error, go to a
// terminal.
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// devProgram is p as dev runs it with logs in format: in text, for a person at a
// terminal, dev's own lines announce the services (their URLs, and that they
// authenticate nobody) and the services do not each add a start line, a development
// warning, a banner and a listening line before them (kit.Program.Announced); in json
// every line is kept for the log collector.
func devProgram[C any](p kit.Program[C], format string) kit.Program[C] {
	p.Announced = format == kit.LogText
	return p
}

// devArgs is the service runner's command line for a service of dev on addr.
func devArgs(addr, format string) []string {
	return []string{"--listen", addr, "--log-format", format}
}
