package testkit

import (
	"io"
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
)

// WantProblem fails the test unless the request was answered (err is nil) with a problem
// document carrying code.
func WantProblem(t testing.TB, res *http.Response, err error, code errcode.Code) {
	t.Helper()
	if err != nil {
		t.Fatalf("transport error %v, want a %s rejection", err, code)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if got := errcode.CodeOf(problem.Read(res.StatusCode, body)); got != code {
		t.Fatalf("status %d code %s (%s), want %s", res.StatusCode, got, body, code)
	}
}
