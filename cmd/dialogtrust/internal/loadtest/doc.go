// Package loadtest runs a closed-loop load against a server and measures it: a fixed
// number of workers, each sending its next request as soon as the previous one is
// answered, for a fixed duration after a warm-up. Every latency is kept (one
// time.Duration per request, per worker, without locks) and the percentiles are exact,
// read from the sorted samples. Errors are counted by their errcode code. With
// Config.Rate the load is open-loop instead: requests are released at a fixed rate and
// each latency counts from its release.
//
// It also reads what the server says about itself: process_cpu_seconds_total and
// process_resident_memory_bytes from a Prometheus /metrics page (the Go client's
// process collector exposes both on Linux), and VmRSS/VmHWM from /proc/PID/status when
// the server runs on this machine. The loops are bounded in time and stop by themselves.
// ReceiverMetrics is the other side of that: the /metrics of "bench receiver".
//
// It is the measuring half of `dialogtrust bench` (tts, verify) and lives under
// cmd/dialogtrust for that reason: nothing else may import it. It implements no spec.
package loadtest
