//go:build !linux

package testkit

import "time"

// ThreadCPU: not available here; ratio benchmarks report wall time only.
func ThreadCPU() (time.Duration, bool) { return 0, false }
