package main

import (
	"bytes"
	"io"
	"os"
	"sync"

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

// devHoldMax bounds what heldWriter keeps: past it, the lines go out at once.
const devHoldMax = 1 << 20

// heldWriter keeps the services' lines until release, in text: what the services log
// while dev starts (their audit trail and admin API lines, the operator's WIT being
// issued) follows dev's own lines at a terminal instead of pushing them up. It is safe
// for concurrent use.
type heldWriter struct {
	mu   sync.Mutex
	w    io.Writer
	held *bytes.Buffer // nil once released
}

func holdWrites(w io.Writer) *heldWriter { return &heldWriter{w: w, held: &bytes.Buffer{}} }

func (h *heldWriter) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held != nil {
		if h.held.Len()+len(b) <= devHoldMax {
			return h.held.Write(b)
		}
		h.releaseLocked()
	}
	return h.w.Write(b)
}

// release writes what was held and lets every later line through; a nil h does
// nothing (json: nothing is held).
func (h *heldWriter) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releaseLocked()
}

func (h *heldWriter) releaseLocked() {
	if h.held != nil {
		_, _ = h.w.Write(h.held.Bytes())
		h.held = nil
	}
}
