package kit

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// UnixScheme starts a listener address that names a Unix domain socket:
// unix:///run/dialogtrust/egress.sock.
const UnixScheme = "unix://"

// DefaultSocketMode is the file mode of a socket ListenUnix opens when the binary names
// none: the owner and the group may connect, nobody else.
const DefaultSocketMode fs.FileMode = 0o660

// UnixPath returns the socket path of an address with UnixScheme, and whether addr has
// it. The path is absolute and in normal form, or UnixPath returns an error.
func UnixPath(addr string) (string, bool, error) {
	p, ok := strings.CutPrefix(addr, UnixScheme)
	if !ok {
		return "", false, nil
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", true, fmt.Errorf("%q: a Unix socket is named by an absolute path in normal form (unix:///run/x.sock)", addr)
	}
	return p, true, nil
}

// ListenUnix opens a Unix domain socket listener at path with file mode perm (only
// permission bits). A file already at path is replaced only if it is a socket that no
// process answers on (left by a process that stopped without removing it); anything
// else there is refused. The socket has its mode before it appears at path: it is bound
// under a temporary name in the same directory, given the mode, then linked to path,
// which fails rather than replace a file that appeared meanwhile. Closing the listener
// removes the socket, unless the name no longer leads to it.
func ListenUnix(path string, perm fs.FileMode) (net.Listener, error) {
	if perm&^fs.ModePerm != 0 {
		return nil, fmt.Errorf("socket mode %#o: only permission bits", uint32(perm))
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("socket %q: the path must be absolute", path)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d.new", filepath.Base(path), os.Getpid()))
	if err := removeStaleSocket(tmp); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(tmp)
	if err != nil {
		return fail(err)
	}
	if err := os.Link(tmp, path); err != nil {
		return fail(fmt.Errorf("socket %q: %w", path, err))
	}
	_ = os.Remove(tmp)
	return &unixListener{UnixListener: ln, path: path, file: fi}, nil
}

// removeStaleSocket removes the socket at path if no process answers on it; nothing
// at path is fine, anything that is not a socket is refused.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%q exists and is not a socket: not replaced", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("socket %q: another process listens on it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// unixListener is a socket ListenUnix opened: its address is the path it was linked
// to, and closing it removes that name if it still leads to this socket.
type unixListener struct {
	*net.UnixListener
	path string
	file fs.FileInfo
	once sync.Once
}

func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.file) {
			_ = os.Remove(l.path)
		}
	})
	return err
}
