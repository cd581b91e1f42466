package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestIssue24HelpOnStdout (issue 24 point 1): asking for help is no error: the help goes
// to stdout with exit 0, however it is asked for.
func TestIssue24HelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}} {
		out, errOut, code := dt(t, "", args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "\nCommands:\n") || !strings.Contains(out, "  wit verify ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// No command at all is a usage error: the same list, on stderr.
	if out, errOut, code := dt(t, ""); code != 2 || out != "" || !strings.Contains(errOut, "\nCommands:\n") {
		t.Errorf("no command: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestIssue24GroupHelp (issue 24 point 1): a group has its own help, its commands'
// synopses, and "dialogtrust wit" without a command says that one is missing.
func TestIssue24GroupHelp(t *testing.T) {
	for g := range groups {
		want, errOut, code := dt(t, "", "help", g)
		if code != 0 || errOut != "" || !strings.HasPrefix(want, "dialogtrust "+g+": ") {
			t.Fatalf("help %s: exit %d, stdout %q, stderr %q", g, code, want, errOut)
		}
		for _, c := range commands {
			if strings.HasPrefix(c.name, g+" ") && !strings.Contains(want, "  dialogtrust "+c.name+" "+c.usage+"\n") {
				t.Errorf("help %s lacks %s's synopsis:\n%s", g, c.name, want)
			}
		}
		if !strings.Contains(want, "\nExample:\n  dialogtrust "+g+" ") || !strings.Contains(want, "\nDocumentation: "+groups[g].doc+"\n") {
			t.Errorf("help %s: no example or documentation link:\n%s", g, want)
		}
		if out, _, code := dt(t, "", g, "--help"); code != 0 || out != want {
			t.Errorf("%s --help: exit %d, stdout %q", g, code, out)
		}
		out, errOut, code := dt(t, "", g)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "usage error: dialogtrust "+g+" needs a command\n") ||
			!strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", g, code, out, errOut)
		}
	}
}

// TestIssue24UnknownCommand (issue 24 point 1): a command that does not exist is named
// as unknown, on stderr with exit 2, with the nearest one when it is likely a typo; the
// list of commands is not printed.
func TestIssue24UnknownCommand(t *testing.T) {
	for _, c := range []struct {
		args          []string
		typed, better string
	}{
		{[]string{"frobnicate"}, "frobnicate", ""},
		{[]string{"wit", "verfy", "x"}, "wit verfy", "wit verify"},
		{[]string{"wit", "generate"}, "wit generate", "key generate"},
		{[]string{"keys", "generate", "--alg", "ES256"}, "keys", "key generate"},
		{[]string{"prxy"}, "prxy", "proxy"},
		{[]string{"help", "wit", "sign"}, "wit sign", ""},
	} {
		out, errOut, code := dt(t, "", c.args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, `dialogtrust: unknown command "`+c.typed+`"`+"\n") ||
			strings.Contains(errOut, "Commands:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
		if got := strings.Contains(errOut, "Did you mean"); got != (c.better != "") ||
			(got && !strings.Contains(errOut, `Did you mean "dialogtrust `+c.better+`"?`)) {
			t.Errorf("%v: want suggestion %q, stderr %q", c.args, c.better, errOut)
		}
	}
}

// TestIssue24CommandHelp (issue 24 point 1): every command's help, asked as "help X" or
// "X --help", is on stdout with exit 0 and has the summary, the synopsis, every flag the
// command has spelled with two dashes, an example of that command and a documentation
// link that leads somewhere.
func TestIssue24CommandHelp(t *testing.T) {
	cli, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := headingAnchors(string(cli))
	for _, c := range commands {
		h, ok := helps[c.name]
		if !ok || h.summary == "" || h.example == "" || h.doc == "" {
			t.Errorf("%s: no help text", c.name)
			continue
		}
		want, errOut, code := dt(t, "", append([]string{"help"}, strings.Fields(c.name)...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("help %s: exit %d, stderr %q", c.name, code, errOut)
		}
		for _, flagArgs := range [][]string{{"--help"}, {"-h"}} {
			if out, errOut, code := dt(t, "", append([]string{c.name}, flagArgs...)...); code != 0 || errOut != "" || out != want {
				t.Errorf("%s %v: exit %d, stderr %q, stdout %q\nwant %q", c.name, flagArgs, code, errOut, out, want)
			}
		}
		if !strings.HasPrefix(want, "dialogtrust "+c.name+": "+h.summary+"\n") ||
			!strings.Contains(want, "\nUsage:\n  dialogtrust "+c.name+" "+c.usage+"\n") ||
			!regexp.MustCompile(`\nExample:\n  dialogtrust `+regexp.QuoteMeta(c.name)+`[ \n]`).MatchString(want) ||
			!strings.HasSuffix(want, "\nDocumentation: "+h.doc+"\n") {
			t.Errorf("help %s:\n%s", c.name, want)
		}
		fs := flagsOf(c)
		n := 0
		fs.VisitAll(func(f *flag.Flag) {
			n++
			if !regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(f.Name) + `( |$)`).MatchString(want) {
				t.Errorf("help %s lacks --%s", c.name, f.Name)
			}
		})
		if n == 0 {
			t.Errorf("%s: no flags found", c.name)
		}
		if regexp.MustCompile(`(?m)^\s+-[a-z]`).MatchString(want) {
			t.Errorf("help %s spells a flag with one dash:\n%s", c.name, want)
		}
		file, anchor, _ := strings.Cut(h.doc, "#")
		if _, err := os.Stat(filepath.Join("../..", file)); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if file == "docs/cli.md" && !anchors[anchor] {
			t.Errorf("%s: docs/cli.md has no heading #%s", c.name, anchor)
		}
	}
	for g, gt := range groups {
		if _, anchor, _ := strings.Cut(gt.doc, "#"); !anchors[anchor] {
			t.Errorf("group %s: docs/cli.md has no heading #%s", g, anchor)
		}
	}
}

// TestIssue24Synopses (issue 24 point 1): each command's synopsis names every flag it
// has (the bench commands, with dozens, end with "[...]"), and docs/cli.md shows the
// same synopsis and spells no flag of a command with one dash.
func TestIssue24Synopses(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range commands {
		syn := c.usage + " "
		flagsOf(c).VisitAll(func(f *flag.Flag) {
			if !strings.HasSuffix(c.usage, " [...]") && !regexp.MustCompile(`--`+regexp.QuoteMeta(f.Name)+`[ \]|=]`).MatchString(syn) {
				t.Errorf("%s: synopsis lacks --%s: %s", c.name, f.Name, c.usage)
			}
			if m := regexp.MustCompile("[\\s`(\\[]-" + regexp.QuoteMeta(f.Name) + `\b`).FindString(doc); m != "" {
				t.Errorf("docs/cli.md spells --%s as %q", f.Name, m)
			}
		})
		if !strings.Contains(doc, "\n    dialogtrust "+c.name+" "+c.usage+"\n") {
			t.Errorf("docs/cli.md lacks the synopsis\n    dialogtrust %s %s", c.name, c.usage)
		}
	}
}

// headingAnchors returns the GitHub anchors of the Markdown headings in doc.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var a strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				a.WriteByte('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
				a.WriteRune(r)
			}
		}
		anchors[a.String()] = true
	}
	return anchors
}

// TestIssue24ProxyHelp (issue 24 points 1 and 4): "proxy --help" lists --check-config
// with the others and does not promise a default configuration there is not; without
// --config nor DIALOGTRUST_PROXY_CONFIG the command is a usage error saying so.
func TestIssue24ProxyHelp(t *testing.T) {
	out, _, code := dt(t, "", "proxy", "--help")
	if code != 0 || !strings.Contains(out, "\n  --check-config\n") || !strings.Contains(out, "\n  --config FILE\n") ||
		!strings.Contains(out, "no default configuration") || strings.Contains(out, "embedded") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	t.Setenv(proxyConfigEnv, "")
	out, errOut, code := dt(t, "", "proxy", "--log-level", "debug")
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "usage error: --config FILE is required (or DIALOGTRUST_PROXY_CONFIG)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := dt(t, "", "proxy", "--config", "x.yaml", "--bogus"); code != 2 || !strings.Contains(errOut, "usage error: flag provided but not defined: --bogus") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestIssue24KeyGenerateKeepsExisting (issue 24 point 3): key generate --out does not
// replace a file that exists (a private key, maybe the only copy) unless --force says
// so: a usage error naming both, the file unchanged.
func TestIssue24KeyGenerateKeepsExisting(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.jwk")
	mustRun(t, "", "key generate", "--alg", "ES256", "--out", out)
	before, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(before), `"d"`) {
		t.Fatalf("%s %v", before, err)
	}
	stdout, errOut, code := dt(t, "", "key generate", "--alg", "EdDSA", "--out", out)
	if code != 2 || stdout != "" || !strings.HasPrefix(errOut, "usage error: --out: "+out+" exists; it may hold a private key: give --force to replace it\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Fatalf("the key was replaced: %s", after)
	}
	mustRun(t, "", "key generate", "--alg", "EdDSA", "--out", out, "--force")
	if after, _ := os.ReadFile(out); string(after) == string(before) || !strings.Contains(string(after), `"OKP"`) {
		t.Fatalf("--force did not replace the key: %s", after)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("files left: %v", ents)
	}
}

// TestIssue24EmptySignatureMessage (issue 24 point 4): a WIT whose signature part is
// empty is refused as malformed with a detail that says the signature is empty, not
// that the token lacks parts.
func TestIssue24EmptySignatureMessage(t *testing.T) {
	e := setup(t, "ES256")
	unsigned := e.wit[:strings.LastIndexByte(e.wit, '.')+1]
	_, errOut, code := dt(t, "", "wit verify", "--trust", e.trust, unsigned)
	if code != 1 || !strings.HasPrefix(errOut, "error: malformed_token\n") || !strings.Contains(errOut, "empty signature") ||
		strings.Contains(errOut, "three parts") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
