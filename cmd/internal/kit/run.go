package kit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Program is one service binary.
type Program[C any] struct {
	// Name is the binary's: it starts its lines on stdout and stderr.
	Name string
	// Config says how the configuration is read.
	Config Spec[C]
	// Check applies the defaults and makes the checks that need no listener, file, key
	// or store (-check-config runs only this).
	Check func(*C) error
	// Build builds the service; background loops it starts run until ctx ends.
	Build func(ctx context.Context, cfg *C, logger *slog.Logger) (*Server, error)
	// Warnings, when set, says what in a configuration Check accepted will likely be
	// refused at run time (a value that must match another party's); each is logged at
	// warn level by -check-config and at the start.
	Warnings func(*C) []string
	// Announced says that the caller announces the start itself, in one place for
	// several services (`dialogtrust dev` in a terminal, whose own lines name each
	// service, its URL and that it authenticates nobody): the start line and the
	// development warning are logged at debug, and no banner or listening line is
	// written.
	Announced bool
}

// Main runs p as the process: until SIGTERM or SIGINT, then a graceful stop. It exits
// 0 after -h, 1 with "<name>: <error>" on stderr when the service cannot start or
// fails.
func Main[C any](p Program[C]) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, p, os.Args[1:], os.Environ(), os.Stdout, os.Stderr, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, p.Name+":", err)
		os.Exit(1)
	}
}

// Run is the whole program: it returns when ctx ends (after a graceful shutdown) or
// when the server cannot start or fails. ready, if set, hears the base URL once the
// listener is up (tests use it).
func Run[C any](ctx context.Context, p Program[C], args, env []string, stdout, stderr io.Writer, ready func(url string)) error {
	args, checkOnly := CheckConfigFlag(args)
	cfg, src, err := Load(p.Config, args, env, stderr)
	if err != nil {
		return err
	}
	level, format := "", ""
	if b := baseOf(cfg); b != nil {
		level, format = b.Log.Level, b.Log.Format
	}
	logger, err := NewLogger(level, format, stderr)
	if err != nil {
		return err
	}
	// The checks run here, before Build (which makes them again, for its other
	// callers), so that a refusal names the file, line and column of the member it is
	// about, or the variable or flag that set it (Source.Locate).
	if err := p.Check(cfg); err != nil {
		return src.Locate(err)
	}
	if checkOnly {
		// Deployment kits (deploy/) check their configuration files with this before
		// shipping them; it opens no listener, file, key or store.
		warn(p, cfg, logger)
		fmt.Fprintln(stdout, p.Name+": configuration ok")
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Build's errors are not located: they are of what it opens (a listener, a file), and
	// one about the address of listen is not that the configuration is wrong.
	s, err := p.Build(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer s.Close()
	warn(p, cfg, logger)
	var debug DebugConfig
	if b := baseOf(cfg); b != nil {
		debug = b.Debug
	}
	stopPprof, err := startPprof(debug, logger)
	if err != nil {
		return err
	}
	defer stopPprof()
	if p.Announced {
		s.announceQuietly(p.Name, src, logger)
	} else {
		s.announce(p.Name, src, logger, stdout, stderr)
	}
	if ready != nil {
		ready(s.URL())
	}
	return s.serve(ctx, logger)
}

// Run is Run(ctx, p, ...): the whole program as main runs it, for the binary's tests
// (servicetest.Start takes it as it is).
func (p Program[C]) Run(ctx context.Context, args, env []string, stdout, stderr io.Writer, ready func(url string)) error {
	return Run(ctx, p, args, env, stdout, stderr, ready)
}

// warn logs p's warnings about cfg, checked (Check has applied the defaults).
func warn[C any](p Program[C], cfg *C, logger *slog.Logger) {
	if p.Warnings == nil {
		return
	}
	for _, w := range p.Warnings(cfg) {
		logger.Warn(w)
	}
}
