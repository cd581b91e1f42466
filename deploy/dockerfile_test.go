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
	from     string // the image, without --platform
	platform string // the --platform flag's value, if any
	name     string // AS name
	instr    []instruction
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
			var platform string
			f = slices.DeleteFunc(f, func(s string) bool {
				p, ok := strings.CutPrefix(s, "--platform=")
				if ok {
					platform = p
				}
				return ok
			})
			st := stage{from: f[0], platform: platform}
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
// them right by construction. Each has two images:
//   - the default target (the last stage): a golang:1.26 builder that builds a static
//     (CGO_ENABLED=0), -trimpath binary of the command, cross-compiling on the build
//     machine's platform; a final gcr.io/distroless/static (or scratch) stage;
//   - target hsm (issue 27, keys in a PKCS#11 token): the same command built with
//     CGO_ENABLED=1 by a golang:1.26-<debian> builder on the target's platform, in a
//     gcr.io/distroless/cc or base stage (glibc, for dlopen of the HSM's module) of the
//     same Debian release as the builder, so the binary needs no newer glibc than the
//     image has;
//
// both with no RUN in the final stage (no shell needed), exec-form ENTRYPOINT and CMD, a
// numeric non-root USER, EXPOSE equal to the port the deployment configurations listen
// on, and the same run-time instructions, so that the hsm image runs exactly as the
// default one.
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
			if len(stages) < 4 {
				t.Fatalf("%s: %d stages, want a builder and a final stage for each of the default and hsm images", path, len(stages))
			}
			if _, err := os.Stat(filepath.Join(root, "cmd", bin)); err != nil {
				t.Errorf("%s builds ./cmd/%s: %v", path, bin, err)
			}
			want := slices.Compact(slices.Sorted(slices.Values(ports[bin])))
			def := stages[len(stages)-1]
			checkImage(t, path, bin, stages, def, false, want)
			var hsm *stage
			for i := range stages {
				if stages[i].name == "hsm" {
					hsm = &stages[i]
				}
			}
			if hsm == nil {
				t.Fatalf("%s: no stage named hsm (docker build --target hsm)", path)
			}
			checkImage(t, path, bin, stages, *hsm, true, want)
			runtime := func(s stage) []string {
				var out []string
				for _, in := range s.instr {
					switch in.cmd {
					case "USER", "EXPOSE", "ENTRYPOINT", "CMD", "WORKDIR", "ENV":
						out = append(out, in.cmd+" "+in.args)
					}
				}
				return out
			}
			if d, h := runtime(def), runtime(*hsm); !slices.Equal(d, h) {
				t.Errorf("%s: the hsm image runs as %q, the default image as %q; they must run alike", path, h, d)
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

// debianRelease maps the golang images' Debian code names to distroless's suffixes.
var debianRelease = map[string]string{"bookworm": "debian12", "trixie": "debian13"}

// checkImage checks one image of a Dockerfile: final, and the builder stage it copies
// the binary from; cgo selects the hsm image's rules.
func checkImage(t *testing.T, path, bin string, stages []stage, final stage, cgo bool, ports []int) {
	t.Helper()
	what := "the default image"
	if cgo {
		what = "the hsm image"
	}
	out := "/out/" + bin
	var builder *stage
	var copied string
	for _, in := range final.all("COPY") {
		f := strings.Fields(in.args)
		for i := range stages {
			if stages[i].name != "" && slices.Contains(f, "--from="+stages[i].name) && len(f) >= 3 && f[len(f)-2] == out {
				builder, copied = &stages[i], f[len(f)-1]
			}
		}
	}
	if builder == nil {
		t.Fatalf("%s: %s does not COPY %s from a named builder stage", path, what, out)
	}
	var build string
	for _, in := range builder.all("RUN") {
		if strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	cgoFlag := "CGO_ENABLED=0"
	if cgo {
		cgoFlag = "CGO_ENABLED=1"
	}
	for _, want := range []string{cgoFlag, "-trimpath", "-o " + out, "./cmd/" + bin} {
		if !strings.Contains(build, want) {
			t.Errorf("%s: %s's go build step %q lacks %q", path, what, build, want)
		}
	}
	if cgo {
		// cgo for another platform would need a C cross toolchain: the builder runs on
		// the target's platform, and its Debian release is the final image's.
		if strings.Contains(builder.platform, "BUILDPLATFORM") {
			t.Errorf("%s: the hsm builder runs on $BUILDPLATFORM; cgo cannot cross-compile without a C cross toolchain", path)
		}
		bm := regexp.MustCompile(`^golang:1\.26(\.\d+)?-([a-z]+)(@sha256:[0-9a-f]{64})?$`).FindStringSubmatch(builder.from)
		fm := regexp.MustCompile(`^gcr\.io/distroless/(cc|base)-(debian\d+):nonroot$`).FindStringSubmatch(final.from)
		switch {
		case bm == nil || debianRelease[bm[2]] == "":
			t.Errorf("%s: the hsm builder is FROM %s, want golang:1.26-<debian release> (bookworm or trixie)", path, builder.from)
		case fm == nil:
			t.Errorf("%s: the hsm image is FROM %s, want gcr.io/distroless/cc-debianN:nonroot (glibc, libstdc++) or base", path, final.from)
		case debianRelease[bm[2]] != fm[2]:
			t.Errorf("%s: the hsm builder is %s, the image %s: the binary would need another glibc than the image has", path, builder.from, fm[2])
		}
	} else {
		if builder.from != "golang:1.26" && !strings.HasPrefix(builder.from, "golang:1.26-") && !strings.HasPrefix(builder.from, "golang:1.26@") {
			t.Errorf("%s: builder stage is FROM %s, want golang:1.26", path, builder.from)
		}
		if final.from != "scratch" && !regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?:nonroot$`).MatchString(final.from) {
			t.Errorf("%s: final stage FROM %s, want gcr.io/distroless/static...:nonroot or scratch", path, final.from)
		}
	}
	if runs := final.all("RUN"); len(runs) > 0 {
		t.Errorf("%s:%d: RUN in %s's final stage; it has no shell and must need none", path, runs[0].line, what)
	}
	users := final.all("USER")
	if len(users) == 0 {
		t.Fatalf("%s: %s sets no USER", path, what)
	}
	user := users[len(users)-1].args
	m := regexp.MustCompile(`^(\d+)(:(\d+))?$`).FindStringSubmatch(user)
	if m == nil || m[1] == "0" || m[3] == "0" {
		t.Errorf("%s: %s: USER %s, want a numeric non-root uid:gid (Kubernetes checks runAsNonRoot by number)", path, what, user)
	}
	eps := final.all("ENTRYPOINT")
	if len(eps) != 1 {
		t.Fatalf("%s: %d ENTRYPOINTs in %s, want 1", path, len(eps), what)
	}
	if argv := execForm(t, path, eps[0]); len(argv) > 0 && argv[0] != copied {
		t.Errorf("%s: %s's ENTRYPOINT runs %s, the binary is at %s", path, what, argv[0], copied)
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
	if !slices.Equal(exposed, ports) {
		t.Errorf("%s: %s EXPOSEs %v, but the deployment configurations listen on %v", path, what, exposed, ports)
	}
}
