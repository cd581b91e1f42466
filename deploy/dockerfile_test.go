package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

// stage is one FROM and what follows it.
type stage struct {
	from  string // the image, without --platform
	name  string // AS name
	instr []instruction
}

func parseDockerfile(t *testing.T, path string) (syntax string, stages []stage) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if strings.HasPrefix(lines[0], "# syntax=") {
		syntax = strings.TrimPrefix(lines[0], "# syntax=")
	}
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				continue
			}
			l = strings.TrimSuffix(l, `\`) + " " + next
		}
		cmd, args, _ := strings.Cut(l, " ")
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "--platform=") })
			st := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", path, start, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, in)
	}
	return syntax, stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instr {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// execForm decodes a JSON-array (exec form) argument; the final images have no shell,
// so a shell-form ENTRYPOINT or CMD could not run.
func execForm(t *testing.T, path string, in instruction) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) == 0 {
		t.Errorf("%s:%d: %s %s is not in exec form (a JSON array); the image has no shell", path, in.line, in.cmd, in.args)
	}
	return argv
}

// servicePorts are the ports each service listens on in every deployment configuration
// of the kit: the Dockerfile's EXPOSE must be that port.
func servicePorts(t *testing.T) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	for _, pattern := range []string{"compose/*/%s.yaml", "k8s/overlays/*/*/config/%s.yaml"} {
		for _, svc := range []string{"wit-issuer", "tts"} {
			files, _ := filepath.Glob(strings.ReplaceAll(pattern, "%s", svc))
			if len(files) == 0 {
				t.Fatalf("no configuration matches %s", strings.ReplaceAll(pattern, "%s", svc))
			}
			for _, f := range files {
				out[svc] = append(out[svc], readServiceConfig(t, f).listenPort(t))
			}
		}
	}
	return out
}

// The container build cannot run here, so the Dockerfiles are checked for what makes
// them right by construction: a golang:1.26 builder that builds a static (CGO_ENABLED=0),
// -trimpath binary of the command; a final distroless (or scratch) stage with no RUN (no
// shell needed), exec-form ENTRYPOINT and CMD, a numeric non-root USER; and EXPOSE equal
// to the port the deployment configurations listen on.
func TestDockerfiles(t *testing.T) {
	root := repoRoot(t)
	ports := servicePorts(t)
	for _, bin := range []string{"wit-issuer", "tts", "dialogtrust"} {
		t.Run(bin, func(t *testing.T) {
			path := filepath.Join("docker", bin+".Dockerfile")
			syntax, stages := parseDockerfile(t, path)
			// RUN --mount needs the BuildKit frontend the syntax line selects.
			if !strings.HasPrefix(syntax, "docker/dockerfile:1") {
				t.Errorf("%s: first line must be # syntax=docker/dockerfile:1 (RUN --mount), got %q", path, syntax)
			}
			if len(stages) < 2 {
				t.Fatalf("%s: %d stages, want a builder and a final stage", path, len(stages))
			}
			builder, final := stages[0], stages[len(stages)-1]
			if builder.from != "golang:1.26" && !strings.HasPrefix(builder.from, "golang:1.26-") && !strings.HasPrefix(builder.from, "golang:1.26@") {
				t.Errorf("%s: builder stage is FROM %s, want golang:1.26", path, builder.from)
			}
			if builder.name == "" {
				t.Fatalf("%s: the builder stage has no name (FROM ... AS build)", path)
			}
			var build string
			for _, in := range builder.all("RUN") {
				if strings.Contains(in.args, "go build") {
					build = in.args
				}
			}
			out := "/out/" + bin
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-o " + out, "./cmd/" + bin} {
				if !strings.Contains(build, want) {
					t.Errorf("%s: the go build step %q lacks %q", path, build, want)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "cmd", bin)); err != nil {
				t.Errorf("%s builds ./cmd/%s: %v", path, bin, err)
			}

			if final.from != "scratch" && !regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?:nonroot$`).MatchString(final.from) {
				t.Errorf("%s: final stage FROM %s, want gcr.io/distroless/static...:nonroot or scratch", path, final.from)
			}
			if runs := final.all("RUN"); len(runs) > 0 {
				t.Errorf("%s:%d: RUN in the final stage; it has no shell and must need none", path, runs[0].line)
			}
			users := final.all("USER")
			if len(users) == 0 {
				t.Fatalf("%s: the final stage sets no USER", path)
			}
			user := users[len(users)-1].args
			m := regexp.MustCompile(`^(\d+)(:(\d+))?$`).FindStringSubmatch(user)
			if m == nil || m[1] == "0" || m[3] == "0" {
				t.Errorf("%s: USER %s, want a numeric non-root uid:gid (Kubernetes checks runAsNonRoot by number)", path, user)
			}
			var copied string
			for _, in := range final.all("COPY") {
				if strings.Contains(in.args, "--from="+builder.name+" "+out+" ") {
					copied = strings.Fields(in.args)[2]
				}
			}
			if copied == "" {
				t.Fatalf("%s: the final stage does not COPY --from=%s %s", path, builder.name, out)
			}
			eps := final.all("ENTRYPOINT")
			if len(eps) != 1 {
				t.Fatalf("%s: %d ENTRYPOINTs in the final stage, want 1", path, len(eps))
			}
			if argv := execForm(t, path, eps[0]); len(argv) > 0 && argv[0] != copied {
				t.Errorf("%s: ENTRYPOINT runs %s, the binary is at %s", path, argv[0], copied)
			}
			for _, in := range final.all("CMD") {
				execForm(t, path, in)
			}

			var exposed []int
			for _, in := range final.all("EXPOSE") {
				for _, f := range strings.Fields(in.args) {
					n, err := strconv.Atoi(strings.TrimSuffix(f, "/tcp"))
					if err != nil {
						t.Errorf("%s:%d: EXPOSE %s", path, in.line, f)
					}
					exposed = append(exposed, n)
				}
			}
			want := slices.Compact(slices.Sorted(slices.Values(ports[bin])))
			if !slices.Equal(exposed, want) {
				t.Errorf("%s: EXPOSE %v, but the deployment configurations listen on %v", path, exposed, want)
			}

			// BuildKit reads <Dockerfile>.dockerignore next to the Dockerfile.
			ignore, err := os.ReadFile(path + ".dockerignore")
			if err != nil {
				t.Fatalf("%s.dockerignore: %v", path, err)
			}
			for _, want := range []string{".git", "**/*.test"} {
				if !slices.Contains(strings.Split(string(ignore), "\n"), want) {
					t.Errorf("%s.dockerignore does not exclude %s", path, want)
				}
			}
		})
	}
}
