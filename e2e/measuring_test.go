package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// measuring is a client started by startMeasuring, its output read as it
// comes.
type measuring struct {
	*live
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
	m := &measuring{startLive(t, append([]string{"client", target, "--format", "jsonl", "-i", "100ms"}, args...)...)}
	m.intervals(t, 1)
	return m
}

// intervals waits, up to 30s, for the client's next n interval lines.
func (m *measuring) intervals(t *testing.T, n int) {
	t.Helper()
	for range n {
		m.waitFor(t, m.outLines, `{"type":"interval"`)
	}
}

// waitFor waits, up to 30s, for a line from ch (the client's stdout or
// stderr lines) that contains want; the test fails with both outputs
// so far if none comes.
func (m *measuring) waitFor(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	limit := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("the client's output ended without %q\nstdout:\n%.2000s\nstderr:\n%.2000s", want, m.out.String(), m.errOut.String())
			}
			if strings.Contains(l, want) {
				return
			}
		case <-limit:
			t.Fatalf("no line with %q within 30s\nstdout:\n%.2000s\nstderr:\n%.2000s", want, m.out.String(), m.errOut.String())
		}
	}
}

// finish waits, up to limit from now, for the client to exit (it is
// killed and the test fails after that). It returns the exit code and
// when the client was seen to exit.
func (m *measuring) finish(t *testing.T, limit time.Duration) (code int, exited time.Time) {
	t.Helper()
	return waitExit(t, m.cmd, m.done, limit, func() string { return fmt.Sprintf("stderr:\n%.2000s", m.errOut.String()) })
}

// result is the client's result: its last line, with the interval lines
// before it put back as its intervals (a JSON lines result leaves them
// out, having printed them already), so that checkCounts checks them
// too. Every line is checked against the schema.
func (m *measuring) result(t *testing.T) *result.Result {
	t.Helper()
	lines := parseLines(t, m.out.String())
	last := lines[len(lines)-1]
	if last.Result == nil {
		t.Fatalf("the client's last line is a %q, not its result", last.Type)
	}
	res := last.Result
	for _, l := range lines[:len(lines)-1] {
		res.Intervals = append(res.Intervals, l.Interval)
	}
	return res
}

// sinceStart is how long after its session opened (the result's start,
// just after the handshake, on the wall clock) the client exited: what
// the client's promises to end in time are counted from.
func sinceStart(res *result.Result, exited time.Time) time.Duration {
	return exited.Sub(res.Start)
}
