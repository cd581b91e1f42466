package main

import (
	"github.com/dialogtrust/dialogtrust/cmd/internal/witissuerservice"
	"github.com/dialogtrust/dialogtrust/internal/service"
)

// The program lives in cmd/internal/witissuerservice, so that `dialogtrust dev` runs
// the same WIT issuer in its process.
func main() { service.Main(witissuerservice.Program) }
