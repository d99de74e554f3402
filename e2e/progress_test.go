//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/testterm"
)

// openPTY opens a pseudo-terminal cols columns wide: its master end, which
// the test reads, and the terminal, for the child. Output processing is
// off (no \n to \r\n), so the master reads the bytes volley wrote.
func openPTY(cols int) (master, term *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	fail := func(what string, err error) (*os.File, *os.File, error) {
		master.Close()
		if term != nil {
			term.Close()
		}
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlock the pseudo-terminal (TIOCSPTLCK)", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		return fail("the pseudo-terminal's number (TIOCGPTN)", err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	tfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open "+name, err)
	}
	term = os.NewFile(uintptr(tfd), name)
	tio, err := unix.IoctlGetTermios(tfd, unix.TCGETS)
	if err != nil {
		return fail(name+": TCGETS", err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(tfd, unix.TCSETS, tio); err != nil {
		return fail(name+": TCSETS", err)
	}
	if err := unix.IoctlSetWinsize(tfd, unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}); err != nil {
		return fail(name+": TIOCSWINSZ", err)
	}
	return master, term, nil
}

// progressLine matches a progress line as drawn in a 3s run.
var progressLine = regexp.MustCompile(`\r(\d+\.\ds/3\.0s[^\r\n\x1b]*)\x1b\[K`)

// TestProgressOnTerminal runs the client with stdout and stderr on a
// pseudo-terminal: the progress line is drawn and redrawn in place, cut
// to the terminal's width, never left in a row of the report, and gone
// when the summary comes. With stderr and stdout on pipes, nothing of it
// is written.
func TestProgressOnTerminal(t *testing.T) {
	const cols = 60
	master, term, err := openPTY(cols)
	require(t, "pty", err)
	defer master.Close()
	var out bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(&out, master) }) // until EIO, once no one has the terminal open
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, volley, "client", "-t", "3", "-i", "1")
	cmd.Stdout, cmd.Stderr = term, term
	cmd.Env = append(os.Environ(), "TERM=xterm")
	err = cmd.Run()
	term.Close()
	wg.Wait()
	if err != nil {
		t.Fatalf("client on a terminal: %v\n%q", err, out.String())
	}
	got := out.String()
	var lines []string
	for _, m := range progressLine.FindAllStringSubmatch(got, -1) {
		lines = append(lines, m[1])
		if n := utf8.RuneCountInString(m[1]); n > cols-1 {
			t.Errorf("progress line %q is %d columns, want at most %d", m[1], n, cols-1)
		}
	}
	figures := false
	for _, l := range lines {
		figures = figures || strings.Contains(l, "probes/s  p50 ")
	}
	if len(lines) < 2 || lines[0] == lines[len(lines)-1] || !figures {
		t.Errorf("progress lines drawn: %q; want it redrawn, with the intervals' figures\nstream %q", lines, got)
	}
	rows, last := testterm.Screen(got)
	summary, intervals := false, 0
	for _, r := range rows {
		if strings.Contains(r, "s/3.0s") {
			t.Errorf("screen row %q holds progress text", r)
		}
		summary = summary || (strings.HasPrefix(r, "--- udp://") && strings.HasSuffix(r, "ended: duration reached ---"))
		if strings.HasPrefix(r, "0.00-1.00s ") || strings.HasPrefix(r, "1.00-2.00s ") {
			intervals++
		}
	}
	if !summary || intervals != 2 || last != "" {
		t.Errorf("screen: summary %v, %d interval rows, cursor row %q; want the summary, 2 and an empty row\nrows %q", summary, intervals, last, rows)
	}

	r := volleyRun(t, "client", "-t", "1", "-i", "0.5")
	if r.code != 0 || !strings.Contains(r.stdout, " summary: ") {
		t.Fatalf("client on pipes: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for name, s := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if strings.ContainsAny(s, "\r\x1b") {
			t.Errorf("client on pipes: %s has progress bytes: %q", name, s)
		}
	}
}
