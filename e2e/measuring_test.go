package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// measuring is a client started by startMeasuring, its output read as it
// comes.
type measuring struct {
	*live
	since time.Time // when its first interval line came: it had measured by then
}

// startMeasuring starts `volley client target args...` with an interval
// line in JSON every 100ms, and waits, up to 30s, for the first: the
// session is open and has measured. A test that stops the reflector, or
// signals the client, mid-run does it then, not after a sleep: on a
// loaded machine a client may take over a second to start and open its
// session (CI at a load average of 14 failed five tests that slept a
// second or less, their reflector stopped before the handshake).
func startMeasuring(t *testing.T, target string, args ...string) *measuring {
	t.Helper()
	c := startLive(t, append([]string{"client", target, "--format", "jsonl", "-i", "100ms"}, args...)...)
	waitLine(t, c.outLines, `{"type":"interval"`, 30*time.Second)
	return &measuring{live: c, since: time.Now()}
}

// finish waits, up to limit, for the client to exit (it is killed and the
// test fails after that). It returns the exit code and how long the
// client ran after its first interval line.
func (m *measuring) finish(t *testing.T, limit time.Duration) (code int, took time.Duration) {
	t.Helper()
	select {
	case err := <-m.done:
		took = time.Since(m.since)
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, took
		case errors.As(err, &ee):
			return ee.ExitCode(), took
		}
		t.Fatalf("volley %s: %v", strings.Join(m.cmd.Args[1:], " "), err)
	case <-time.After(limit):
		m.cmd.Process.Kill()
		<-m.done
		t.Fatalf("volley %s still ran %v after its first interval: killed\nstderr:\n%.2000s", strings.Join(m.cmd.Args[1:], " "), limit, m.errOut.String())
	}
	return 0, 0
}

// result is the client's result: the last of its lines, each checked
// against the schema.
func (m *measuring) result(t *testing.T) *result.Result {
	t.Helper()
	lines := parseLines(t, m.out.String())
	last := lines[len(lines)-1]
	if last.Result == nil {
		t.Fatalf("the client's last line is a %q, not its result", last.Type)
	}
	return last.Result
}
