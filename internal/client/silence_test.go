package client

import (
	"net"
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
			// Probe 3 left at 0.8s; probe 4's timeout ended at 1.3s,
			// Silence after: the first whole timeout that far.
			if c := r.res.Summary.Counts; r.res.Stopped != "reflector-silent" || c.Received != 2 || r.took < 1300*time.Millisecond || r.took > 1400*time.Millisecond {
				t.Fatalf("stopped %q after %v, counts %+v, want silent at 1.3s, 2 received", r.res.Stopped, r.took, c)
			}
		},
	}, {
		// One probe lost among probes farther apart than Silence is a
		// loss, not silence: it was taken for silence as the next probe
		// was sent (open loop, and bursts of a closed loop).
		name:  "one loss with gaps longer than silence",
		delay: 20 * time.Millisecond,
		path:  func(_ *testing.T, c *testconn.Conn) { c.DropUp = func(seq uint64) bool { return seq == 3 } },
		cfg:   Config{SendInterval: 400 * time.Millisecond, Duration: 2 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			if c := r.res.Summary.Counts; r.res.Stopped != "duration" || c.Sent != 5 || c.Lost != 1 {
				t.Fatalf("stopped %q, counts %+v, want duration, 5 sent, 1 lost", r.res.Stopped, c)
			}
		},
	}, {
		name:  "one loss between closed-loop bursts",
		delay: time.Millisecond,
		path:  func(_ *testing.T, c *testconn.Conn) { c.DropUp = func(seq uint64) bool { return seq == 3 } },
		cfg:   Config{Burst: 1, Period: 400 * time.Millisecond, Duration: 2 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond},
		check: func(t *testing.T, r ran) {
			if c := r.res.Summary.Counts; r.res.Stopped != "duration" || c.Lost != 1 {
				t.Fatalf("stopped %q, counts %+v, want duration, 1 lost", r.res.Stopped, c)
			}
		},
	}, {
		// Stalls of the client's own that keep coming delay the silence
		// by their length, not for ever.
		name:  "silent through repeated client stalls",
		delay: time.Millisecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DropUp = func(seq uint64) bool { return seq > 50 }
			c.StallRead = func(n uint64) time.Duration {
				if n%10 == 0 {
					return 150 * time.Millisecond
				}
				return 0
			}
		},
		cfg:     Config{Rate: 1000, Duration: 30 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond, sleep: time.Sleep},
		wantErr: ErrSilent,
		check: func(t *testing.T, r ran) {
			// A read a millisecond apart (each probe's timeout), a
			// tenth of them 150 ms late: silence gains about 14 ms per
			// 160 ms, and is reached in about 5 s.
			if r.res.Stopped != "reflector-silent" || r.took > 10*time.Second {
				t.Fatalf("stopped %q after %v, want silent within 10s", r.res.Stopped, r.took)
			}
		},
	}, {
		// A reply read after its probe's timeout, before the loop
		// declared the probe lost (the client stalled with the reply on
		// its socket), is late, as any reply after the timeout is: not a
		// round trip longer than the timeout.
		name:  "reply read after its timeout",
		delay: time.Millisecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.StallRead = func(n uint64) time.Duration {
				if n == 50 {
					return 500 * time.Millisecond
				}
				return 0
			}
		},
		cfg: Config{Count: 100, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond},
		check: func(t *testing.T, r ran) {
			s := r.res.Summary
			if s.Counts.Late != 1 || s.Counts.Lost != 1 || s.Counts.LostDown != 1 || s.RTT.Max >= 100*time.Millisecond {
				t.Fatalf("counts %+v, RTT max %v, want one lost down and late, every RTT under the timeout", s.Counts, s.RTT.Max)
			}
			checkTotals(t, r.res)
		},
	}, {
		// A run that ends before its sender's first slot has an empty
		// measurement, not one from time zero.
		name:  "ended before the first slot",
		delay: time.Millisecond,
		path:  func(_ *testing.T, c *testconn.Conn) { c.ReadLimit = 1 },
		cfg: Config{Rate: 1000, Duration: time.Second, sleep: time.Sleep, Thread: func(_ int, role string) error {
			if role == "sender" {
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		}},
		wantErr: net.ErrClosed,
		check: func(t *testing.T, r ran) {
			if r.res == nil || r.res.Summary.End-r.res.Summary.Start > time.Second {
				t.Fatalf("result %+v, want a partial one no longer than the run", r.res)
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
