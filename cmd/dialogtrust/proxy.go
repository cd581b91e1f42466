package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/proxyservice"
)

// proxyRun is "dialogtrust proxy": the proxy's program (cmd/internal/proxyservice), run
// by the service runner until SIGTERM or SIGINT.
func proxyRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if err := checkProxyArgs(args, stderr); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return kit.Run(ctx, proxyservice.Program, args, os.Environ(), stdout, stderr, nil)
}
