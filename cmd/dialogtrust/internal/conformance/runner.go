package conformance

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Format is the only vector format this runner accepts.
const Format = "wimse-conformance/v6"

// Result is the outcome of one case.
type Result struct {
	Suite, File, Case string
	Passed            bool
	Detail            string
}

func (r Result) String() string {
	status := "PASS"
	if !r.Passed {
		status = "FAIL"
	}
	s := fmt.Sprintf("%s %s/%s %s", status, r.Suite, strings.TrimSuffix(filepath.Base(r.File), ".json"), r.Case)
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

type manifest struct {
	Format  string `json:"format"`
	Vectors []struct {
		Suite string `json:"suite"`
		Path  string `json:"path"`
		Spec  string `json:"spec"`
	} `json:"vectors"`
}

type suiteFunc func(file string, raw []byte) []Result

var suites = map[string]suiteFunc{}

func register(name string, f suiteFunc) { suites[name] = f }

// embedded is the wimsey vector set, copied into the repository with its SOURCE.md and
// LICENSE (Apache-2.0), so that the runner and the tests need nothing beside the clone.
//
//go:embed testdata/wimsey
var embedded embed.FS

// Vectors is the embedded wimsey vector set: manifest.json at its root.
func Vectors() fs.FS {
	sub, err := fs.Sub(embedded, "testdata/wimsey")
	if err != nil {
		panic(err) // a constant, valid path
	}
	return sub
}

// Run reads dir/manifest.json and runs every listed vector (see RunFS).
func Run(dir string) ([]Result, error) {
	return RunFS(os.DirFS(dir))
}

// RunFS reads manifest.json at the root of fsys and runs every listed vector. It fails as
// a whole when the manifest is not v6, names an unknown suite, or a suite directory holds
// an unlisted file.
func RunFS(fsys fs.FS) ([]Result, error) { return RunFSProgress(fsys, nil) }

// RunFSProgress is RunFS; progress, when set, hears each vector file as it is run
// (done counts the files run before it, of total).
func RunFSProgress(fsys fs.FS, progress func(done, total int, file string)) ([]Result, error) {
	b, err := fs.ReadFile(fsys, "manifest.json")
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("manifest format %q, want %q", m.Format, Format)
	}
	listed := map[string]bool{}
	dirs := map[string]bool{}
	for _, v := range m.Vectors {
		if _, ok := suites[v.Suite]; !ok {
			return nil, fmt.Errorf("unknown suite %q", v.Suite)
		}
		listed[path.Clean(v.Path)] = true
		dirs[path.Dir(path.Clean(v.Path))] = true
	}
	for d := range dirs {
		files, _ := fs.Glob(fsys, path.Join(d, "*.json"))
		for _, f := range files {
			if !listed[f] {
				return nil, fmt.Errorf("%s is not listed in the manifest", f)
			}
		}
	}
	var out []Result
	for i, v := range m.Vectors {
		if progress != nil {
			progress(i, len(m.Vectors), v.Path)
		}
		raw, err := fs.ReadFile(fsys, path.Clean(v.Path))
		if err != nil {
			return nil, err
		}
		var head struct {
			Format string `json:"format"`
			Suite  string `json:"suite"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("%s: %w", v.Path, err)
		}
		if head.Format != Format || head.Suite != v.Suite {
			return nil, fmt.Errorf("%s: format %q suite %q do not match the manifest", v.Path, head.Format, head.Suite)
		}
		out = append(out, suites[v.Suite](v.Path, raw)...)
	}
	return out, nil
}

// Print writes one line per case and the closing "N passed, M failed" line; it returns M.
func Print(w io.Writer, rs []Result) int {
	failed := 0
	for _, r := range rs {
		fmt.Fprintln(w, r.String())
		if !r.Passed {
			failed++
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", len(rs)-failed, failed)
	return failed
}

// Suites lists the registered suite names.
func Suites() []string {
	var s []string
	for k := range suites {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// expectCode turns a rejection into a Result: it passes only with the recorded code.
func expectCode(suite, file, id string, err error, want string) Result {
	r := Result{Suite: suite, File: file, Case: id}
	switch {
	case err == nil:
		r.Detail = "accepted, want " + want
	case string(errcode.CodeOf(err)) != want:
		r.Detail = fmt.Sprintf("rejected with %s, want %s (%v)", errcode.CodeOf(err), want, err)
	default:
		r.Passed = true
	}
	return r
}

func pass(suite, file, id string, err error) Result {
	r := Result{Suite: suite, File: file, Case: id, Passed: err == nil}
	if err != nil {
		r.Detail = err.Error()
	}
	return r
}

// merge overlays a negative case's fields on the positive case (SOURCE.md: a case records
// only what it overrides).
func merge(base, override json.RawMessage) ([]byte, error) {
	var b, o map[string]json.RawMessage
	if err := json.Unmarshal(base, &b); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(override, &o); err != nil {
		return nil, err
	}
	for k, v := range o {
		b[k] = v
	}
	return json.Marshal(b)
}
