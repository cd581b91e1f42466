// Package httpserver builds the http.Server every dialogtrust service runs behind, with
// the bounds an exposed server needs: a deadline for the request headers, one for the
// whole request including its body, one for writing the response, a bound on how long
// a kept-alive connection may sit idle, and a bound on the size of the headers.
//
// Everything is in httpserver.go (New and its bounds).
//
// Without them net/http waits forever: a client that sends its headers or its body one
// octet a minute (slowloris) holds a connection and a goroutine as long as it likes,
// and an idle connection is never closed. The binaries (cmd/tts, cmd/wit-issuer, the
// benchmarks of cmd/dialogtrust) take their servers from New; a program that serves a
// handler of this module (tts.Server, witissuer.Server, a dialog or handoff receiver)
// gets the same bounds by serving it with New too:
//
//	srv := httpserver.New(s.Handler())
//	err := srv.Serve(ln)
//
// The values are the constants below. Fields set afterwards on the returned server win,
// so a program can tighten one (cmd/wit-issuer lowers MaxHeaderBytes to 32 KiB).
package httpserver
