package main

import (
	"github.com/dialogtrust/dialogtrust/cmd/internal/ttsservice"
	"github.com/dialogtrust/dialogtrust/internal/service"
)

// The program lives in cmd/internal/ttsservice, so that `dialogtrust dev` runs the
// same TTS in its process.
func main() { service.Main(ttsservice.Program) }
