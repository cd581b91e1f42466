package main

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/dialogtrust/dialogtrust/internal/demo"
)

func demoRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := demo.Run(ctx, stdout); err != nil {
		return silentFailure{err.Error()}
	}
	return nil
}
