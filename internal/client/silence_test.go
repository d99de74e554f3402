package client

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testconn"
)

// TestSilence: what is and is not a reflector gone silent. Silence is
// counted from the later of the last reply and the first probe sent since,
// and not over a stall of the client's own; a run with nothing in flight
// does not spin waiting for it. Each case found by an outside test.
func TestSilence(t *testing.T) {
	runCases(t, []runCase{{
		// Every gap longer than Silence: the second probe went out 400 ms
		// after the last reply, and was taken for 400 ms of silence.
		// ReadLimit: the loop, with nothing in flight past the silence,
		// spun on a deadline already past.
		name:  "open-loop gaps longer than silence",
		delay: time.Millisecond,
		path:  func(_ *testing.T, c *testconn.Conn) { c.ReadLimit = 5000 },
		cfg:   Config{SendInterval: 400 * time.Millisecond, Duration: 2 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			if c := r.res.Summary.Counts; r.res.Stopped != "duration" || c.Sent != 5 || c.Received != 5 {
				t.Fatalf("stopped %q, counts %+v, want duration, 5 sent and received", r.res.Stopped, c)
			}
		},
	}, {
		// A reflector that stops answering is still found silent with
		// such gaps: two probes unanswered Silence apart.
		name:  "silent with gaps longer than silence",
		delay: time.Millisecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.ReadLimit = 5000
			c.DropUp = func(seq uint64) bool { return seq > 2 }
		},
		cfg:     Config{SendInterval: 400 * time.Millisecond, Duration: 10 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond, sleep: time.Sleep},
		wantErr: ErrSilent,
		check: func(t *testing.T, r ran) {
			if c := r.res.Summary.Counts; r.res.Stopped != "reflector-silent" || c.Received != 2 || r.took > 2*time.Second {
				t.Fatalf("stopped %q after %v, counts %+v, want silent after the 4th probe, 2 received", r.res.Stopped, r.took, c)
			}
		},
	}, {
		// The client's own read stalls 500 ms (a stopped process): the
		// replies waiting for it are no silence of the reflector's.
		name:  "client stall",
		delay: time.Millisecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.StallRead = func(n uint64) time.Duration {
				if n == 100 {
					return 500 * time.Millisecond
				}
				return 0
			}
		},
		cfg: Config{Rate: 1000, Duration: 2 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			if r.res.Stopped != "duration" || len(r.res.Reconnects) != 0 || r.res.Summary.Counts.Received == 0 {
				t.Fatalf("stopped %q, %d reconnects, counts %+v, want duration, none, replies", r.res.Stopped, len(r.res.Reconnects), r.res.Summary.Counts)
			}
			checkTotals(t, r.res)
		},
	}})
}
