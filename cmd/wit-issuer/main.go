package main

import (
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/witissuerservice"
)

// The program lives in cmd/internal/witissuerservice, so that `dialogtrust dev` runs
// the same WIT issuer in its process.
func main() { kit.Main(witissuerservice.Program) }
