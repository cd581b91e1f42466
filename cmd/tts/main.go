package main

import (
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/ttsservice"
)

// The program lives in cmd/internal/ttsservice, so that `dialogtrust dev` runs the
// same TTS in its process.
func main() { kit.Main(ttsservice.Program) }
