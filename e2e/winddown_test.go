package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// windDownSlack is what CI may add to the client's own bound: a loaded
// machine schedules late, a process takes a moment to start and exit.
const windDownSlack = 1500 * time.Millisecond

// TestWindDownSilentReflector: a UDP reflector that goes silent (stopped
// with SIGSTOP) mid-run does not hold the client's end: it ends within
// max(--timeout, 1s) of its deadline or a signal, in-flight wait and close
// included, and prints its report.
func TestWindDownSilentReflector(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		sig  syscall.Signal // 0: the run ends at its deadline
		// grace is max(--timeout, 1s).
		grace time.Duration
	}{
		{"deadline", nil, 0, time.Second},
		{"deadline window", []string{"--window", "8", "--timeout", "1500ms"}, 0, 1500 * time.Millisecond},
		{"deadline parallel", []string{"-P", "2"}, 0, time.Second},
		{"deadline open loop", []string{"--rate", "50"}, 0, time.Second},
		{"SIGINT", nil, syscall.SIGINT, time.Second},
		{"SIGTERM window", []string{"--window", "8", "--timeout", "1500ms"}, syscall.SIGTERM, 1500 * time.Millisecond},
		{"SIGHUP reconnect", []string{"--reconnect"}, syscall.SIGHUP, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, "127.0.0.1:0", "-q")
			pid := srv.cmd.Process.Pid
			t.Cleanup(func() {
				// Before startServer's own cleanup kills it.
				_ = syscall.Kill(pid, syscall.SIGCONT)
			})
			p := startMeasuring(t, srv.addr, append([]string{"-t", "2s"}, tt.args...)...)
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			var code int
			var took time.Duration
			var exited time.Time
			if tt.sig == 0 {
				code, exited = p.finish(t, 30*time.Second)
			} else {
				// An interval with no reply: probes are in flight to the
				// frozen reflector (a sleep here was not enough for a
				// client starved of CPU).
				p.waitFor(t, p.outLines, `"received":0,`)
				sent := time.Now()
				if err := p.cmd.Process.Signal(tt.sig); err != nil {
					t.Fatal(err)
				}
				code, exited = p.finish(t, 30*time.Second)
				took = exited.Sub(sent)
				if bound := tt.grace + windDownSlack; took > bound {
					t.Errorf("the client took %v to end after %v, want at most %v", took, tt.sig, bound)
				}
			}
			res := p.result(t)
			if tt.sig == 0 {
				// The run measures for 2s after its handshake, then has
				// the grace to end.
				took = sinceStart(res, exited)
				if bound := 2*time.Second + tt.grace + windDownSlack; took > bound {
					t.Errorf("the client took %v to end after its handshake, want at most %v", took, bound)
				}
			}
			t.Logf("exit %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(p.errOut.String()))
			if code != 0 {
				t.Errorf("exit %d, want 0 (stderr %q)", code, p.errOut.String())
			}
			checkCounts(t, res)
			wantStop := "duration"
			if tt.sig != 0 {
				wantStop = "interrupted"
			}
			if res.Stopped != wantStop || res.ReflectorCount != "last-reply" || res.Summary.Counts.Sent == 0 || res.Summary.Counts.Lost == 0 {
				t.Errorf("stopped %q, count from %q, counts %+v: want %s, last-reply (no CloseAck from a stopped reflector), probes sent and lost",
					res.Stopped, res.ReflectorCount, res.Summary.Counts, wantStop)
			}
		})
	}
}
