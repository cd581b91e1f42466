package proxy_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// pythonWith finds an interpreter that imports modules (Debian's python3-uvicorn and
// python3-starlette for the ASGI server; wsgiref is in the standard library). Without
// one the test is skipped, except under CI=true, where it fails.
func pythonWith(t *testing.T, modules string) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import "+modules).Run() == nil {
			return p
		}
	}
	testkit.PeerMissing(t, "no python3 importing %s (apt-get install python3-starlette python3-uvicorn)", modules)
	return ""
}

// startPythonApp runs testdata/fields/app.py in mode (wsgi or asgi) on a loopback
// listener the test opened, handed over as file descriptor 3, until the test ends,
// and returns its URL and its output.
func startPythonApp(t *testing.T, py, mode string) (string, *testkit.SyncBuffer) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	mustOK(t, err)
	f, err := ln.(*net.TCPListener).File()
	mustOK(t, err)
	ln.Close()
	cmd := exec.Command(py, filepath.Join("testdata", "fields", "app.py"), mode)
	cmd.ExtraFiles = []*os.File{f}
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	mustOK(t, cmd.Start())
	f.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by pid: the process this test started
		_ = cmd.Wait()
	})
	return "http://" + ln.Addr().String(), out
}

// pythonSeen reads app.py's answer: the fields as the application read them. WSGI
// names them as CGI does (the environ's HTTP_ variables, a field given twice or in
// two spellings joined into one); ASGI hands each field line over as it came.
func pythonSeen(t *testing.T, mode string, body []byte) []seenField {
	var r struct {
		Environ map[string]string `json:"environ"`
		Headers [][2]string       `json:"headers"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v: %s", mode, err, body)
	}
	var fs []seenField
	for k, v := range r.Environ {
		fs = append(fs, seenField{strings.TrimPrefix(k, "HTTP_"), v})
	}
	for _, h := range r.Headers {
		fs = append(fs, seenField{h[0], h[1]})
	}
	if len(fs) == 0 {
		t.Fatalf("%s: the application saw no field: %s", mode, body)
	}
	return fs
}

// Issue 22 point 1 against applications no one here wrote: Python's wsgiref (WSGI,
// PEP 3333: "_" and "-" are one name, repetitions joined) and Starlette on uvicorn
// (ASGI: the field lines as sent) behind a real ingress. A caller that proved itself
// adds, after its signature (as anyone between the proxies could), forged spellings
// and repetitions of every field the ingress sets or checks; outside a dialog, when
// starting one and continuing it, each application sees exactly what was verified,
// under every name it could read it by, and nothing else there.
func TestIssue22PythonApps(t *testing.T) {
	for _, c := range []struct{ mode, modules string }{{"wsgi", "wsgiref"}, {"asgi", "uvicorn, starlette"}} {
		t.Run(c.mode, func(t *testing.T) {
			py := pythonWith(t, c.modules)
			appURL, appOut := startPythonApp(t, py, c.mode)
			p := newPair(t, pairOptions{stateful: true, ingress: func(ic *proxy.IngressConfig) { ic.Upstream = appURL }})
			forged := forgeries(false)
			p.tamper = func(r *http.Request) {
				for k, v := range forged {
					r.Header[k] = v
				}
			}
			check := func(step string, h http.Header, dc *dialog.Context, established bool) *dialog.Context {
				t.Helper()
				res, body := p.call(t, "/t1", `{"q":1}`, h)
				if res.StatusCode != 200 {
					t.Fatalf("%s: %d %s\n%s", step, res.StatusCode, body, appOut.String())
				}
				if dc == nil {
					dc, _ = dialog.FromHeader(res.Header)
				}
				if bad := checkSeen(pythonSeen(t, c.mode, body), verifiedWant(p.a1.String(), p.ingress.URL, dc, established), c.mode == "wsgi"); len(bad) > 0 {
					t.Fatalf("%s: the %s application saw:\n%s", step, c.mode, strings.Join(bad, "\n"))
				}
				return dc
			}
			check("outside a dialog", nil, nil, false)
			dc := check("starting a dialog", start(), nil, true)
			if dc == nil {
				t.Fatal("no dialog started")
			}
			check("continuing it", http.Header{dialog.HeaderName: {dc.Value()}}, dc, false)
		})
	}
}
