//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/testsock"
)

// TestSchedSetupFails: a scheduling flag the server cannot honour (a CPU
// it may not run on, a priority or niceness out of range) is a usage
// error, exit 2, naming the flag and what it accepts, and comes before
// the server says it listens or makes its log file or socket (issue 14).
func TestSchedSetupFails(t *testing.T) {
	dir := testsock.ShortDir(t)
	n := runtime.NumCPU() // the CPUs this test, and so the server, may run on
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--cpu past the last", []string{"--cpu", fmt.Sprint(n)}, fmt.Sprintf("--cpu %d: want CPUs this process may run on: ", n)},
		{"--cpu range past the last", []string{"--cpu", fmt.Sprintf("0-%d", n+3)}, fmt.Sprintf("--cpu %d: want CPUs this process may run on: ", n)},
		{"--cpu 99", []string{"--cpu", "99"}, "--cpu 99: want CPUs this process may run on: "},
		{"--realtime 100", []string{"--realtime", "100"}, "--realtime 100: want 1 to 99"},
		{"--nice 30", []string{"--nice", "30"}, "--nice 30: want -20 to 19"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.args[1] == "99" && n > 99 {
				t.Skipf("skipping: this machine has CPU 99")
			}
			log, sock := filepath.Join(dir, "log.csv"), filepath.Join(dir, "v.sock")
			args := append([]string{"--listen", "127.0.0.1:0", "--log", log, "--unix", sock}, tt.args...)
			r := setupRun(t, args...)
			checkSetupFails(t, r, tt.want)
			if r.code != 2 {
				t.Errorf("exit %d, want 2 (a usage error)", r.code)
			}
			for _, p := range []string{log, sock} {
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s was made: %v", p, err)
				}
			}
		})
	}
}

// TestSchedNotesOnStderr: what the scheduling flags applied to each
// worker is said on stderr, as the README has it; stdout begins with the
// address and carries no such notes.
func TestSchedNotesOnStderr(t *testing.T) {
	// setupRun kills the server 2 s after its first line: time enough for
	// its workers to start and say what was applied.
	r := setupRun(t, "--listen", "127.0.0.1:0", "--tcp=false", "--cpu", "0")
	if !strings.HasPrefix(r.stdout, "listening on udp://127.0.0.1:") || strings.Contains(r.stdout, "thread:") {
		t.Errorf("stdout %q: want the address first and no thread notes", r.stdout)
	}
	if !strings.Contains(r.stderr, "volley: worker 1 (udp://127.0.0.1:") || !strings.Contains(r.stderr, "thread: CPU 0\n") {
		t.Errorf("stderr %q: want worker 1's thread note, CPU 0", r.stderr)
	}
}
