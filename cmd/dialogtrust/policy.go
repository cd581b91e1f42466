package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/dialogtrust/dialogtrust/cmd/internal/ttsservice"
)

// policyTest: dialogtrust policy test. It runs the issuance policy of a TTS
// configuration file on a file of requests with their expected decisions, as opa test
// does, and prints PASS or FAIL per case: exit 1 when a case failed, 2 when either
// file cannot be read or its policy does not compile.
func policyTest(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("policy test", stderr)
	quiet := fs.Bool("quiet", false, "print only the failures and the summary")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageError{"policy test needs POLICY and REQUESTS"}
	}
	out := stdout
	if *quiet {
		out = passFilter{stdout}
	}
	failed, err := ttsservice.TestPolicy(fs.Arg(0), fs.Arg(1), out)
	var bad ttsservice.BadInput
	if errors.As(err, &bad) {
		return usageError{bad.Error()}
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return silentFailure{fmt.Sprintf("%d failed", failed)}
	}
	return nil
}

// passFilter drops the PASS lines (TestPolicy writes one line per Write).
type passFilter struct{ w io.Writer }

func (p passFilter) Write(b []byte) (int, error) {
	if len(b) >= 5 && string(b[:5]) == "PASS " {
		return len(b), nil
	}
	return p.w.Write(b)
}
