package ttsservice

import (
	"io"
	"log/slog"
	"net"
)

type slogLogger = slog.Logger

func discardLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

type netListenConfig struct{}

func (netListenConfig) listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
