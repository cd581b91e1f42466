//go:build !linux

package bench

import "time"

// threadCPU: not available here; the ratio benchmark reports wall time only.
func threadCPU() (time.Duration, bool) { return 0, false }
