package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// tty is a terminal open as a file.
type tty struct{ *os.File }

// Width asks the terminal its width (TIOCGWINSZ).
func (t tty) Width() int {
	cols := 0
	if rc, err := t.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			if ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ); err == nil {
				cols = int(ws.Col)
			}
		})
	}
	return cols
}

// ttyOf returns w as a terminal when it is a file open on one: one whose
// terminal attributes can be read (TCGETS), as isatty(3) asks.
func ttyOf(w io.Writer) (terminal, bool) {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return nil, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	isTerm := false
	rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		isTerm = err == nil
	})
	if !isTerm {
		return nil, false
	}
	return tty{f}, true
}
