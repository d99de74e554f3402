package testsock

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
)

// FullBacklog listens on a Unix stream socket at path with a backlog of
// one connection and fills it, so that connecting fails with EAGAIN. The
// returned listener accepts.
func FullBacklog(t testing.TB, path string) net.Listener {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	for range 8 {
		c, err := net.Dial("unix", path)
		if errors.Is(err, syscall.EAGAIN) {
			return ln
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the backlog never filled")
	return nil
}
