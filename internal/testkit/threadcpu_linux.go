//go:build linux

package testkit

import (
	"syscall"
	"time"
	"unsafe"
)

// ThreadCPU is the CPU time of the calling OS thread so far (clock_gettime
// CLOCK_THREAD_CPUTIME_ID, nanosecond accounting; getrusage's RUSAGE_THREAD counts in
// scheduler ticks, too coarse for one request): with the goroutine locked to its
// thread, the difference around a synchronous handler call is the CPU that call used,
// whatever else the machine ran meanwhile. ok is false where it cannot be read.
func ThreadCPU() (d time.Duration, ok bool) {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
