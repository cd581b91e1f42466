package kit

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unixClient is a net/http client whose every connection goes to the socket at path.
func unixClient(path string) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}}}
}

// A further listener on a Unix socket serves through the runner, with the socket's
// mode set, and the socket is gone after the graceful stop.
func TestHandleMoreOnUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "more.sock")
	p, more := withMore(func(s *Server, logger *slog.Logger) (string, error) {
		ln, err := ListenUnix(sock, 0o600)
		if err != nil {
			return "", err
		}
		return s.HandleMoreOn(ln, nil, moreHandler, logger), nil
	})
	_, stop := startRun(t, p, io.Discard, io.Discard)
	if u := <-more; u != "unix://"+sock {
		t.Fatalf("URL %q", u)
	}
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}
	wantBody(t, unixClient(sock), "http://svc/", "more")
	stop()
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there after the stop: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(sock)); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// A stale socket is replaced; a live one, a regular file and a bad mode are refused.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")

	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close() // the file stays, nobody answers
	ln, err := ListenUnix(sock, DefaultSocketMode)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	if fi, _ := os.Lstat(sock); fi.Mode().Perm() != 0o660 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := ListenUnix(sock, DefaultSocketMode); err == nil || !strings.Contains(err.Error(), "another process listens") {
		t.Fatalf("live socket: %v", err)
	}
	ln.Close()
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("not removed at close: %v", err)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(file, DefaultSocketMode); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatal("the regular file was touched")
	}
	if _, err := ListenUnix(sock, 0o4660); err == nil {
		t.Fatal("setuid bit accepted")
	}
	if _, err := ListenUnix("rel.sock", DefaultSocketMode); err == nil {
		t.Fatal("relative path accepted")
	}

	// A socket another listener took the name for since is not removed at close.
	ln, err = ListenUnix(sock, DefaultSocketMode)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(sock)
	other, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ln.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("another's socket removed: %v", err)
	}
}

func TestUnixPath(t *testing.T) {
	for addr, want := range map[string]string{"unix:///run/x.sock": "/run/x.sock", "127.0.0.1:1": "", "unix://run/x.sock": "err", "unix:///run/../x.sock": "err"} {
		p, ok, err := UnixPath(addr)
		switch {
		case want == "err" && err == nil, want != "err" && err != nil:
			t.Errorf("%s: %v", addr, err)
		case want == "" && ok, want != "" && want != "err" && p != want:
			t.Errorf("%s: %q %v", addr, p, ok)
		}
	}
}
