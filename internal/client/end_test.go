package client

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testconn"
)

// TestEnd: how a run ends, and what its result says of it.
func TestEnd(t *testing.T) {
	runCases(t, []runCase{{
		name:  "silent reflector",
		delay: time.Millisecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			var probes int
			c.DropUp = func(uint64) bool { probes++; return probes > 50 }
		},
		cfg:     Config{Duration: time.Minute, Timeout: 200 * time.Millisecond},
		wantErr: ErrSilent,
		check: func(t *testing.T, r ran) {
			if r.took > 5*time.Second {
				t.Errorf("silence noticed after %v, want about 3s", r.took)
			}
			if r.res == nil {
				t.Fatalf("Run = nil, %v, want a partial result", r.err)
			}
			got := r.res.Summary.Counts
			if got.Received != 50 || got.LostUp != got.Lost || r.res.Stopped != "reflector-silent" {
				t.Fatalf("partial result %+v stopped %q, want 50 received, every loss up", got, r.res.Stopped)
			}
			checkTotals(t, r.res)
		},
	}, {
		name: "no reflector",
		path: func(_ *testing.T, c *testconn.Conn) {
			c.Dead = func() bool { return true }
		},
		cfg:     Config{Timeout: time.Second},
		wantErr: ErrNoReflector,
		check: func(t *testing.T, r ran) {
			if r.res != nil {
				t.Fatalf("Run = %v, %v, want ErrNoReflector and no result", r.res, r.err)
			}
			if want := "no reflector answered at udp://127.0.0.2:7766 after 3 tries over 3s"; r.err.Error() != want {
				t.Fatalf("error = %q, want %q", r.err, want)
			}
		},
	}, {
		name:      "interrupt",
		delay:     time.Millisecond,
		cfg:       Config{Duration: time.Hour},
		interrupt: 1500 * time.Millisecond,
		check: func(t *testing.T, r ran) {
			res := r.res
			if res.Stopped != "interrupted" || res.ReflectorCount != "close" || res.Summary.Counts.Lost != 0 {
				t.Fatalf("stopped %q, count from %q, counts %+v, want interrupted, close, no loss", res.Stopped, res.ReflectorCount, res.Summary.Counts)
			}
			checkTotals(t, res)
		},
	}, {
		// A reflector that answers the close gives the run its exact
		// count, also when the last probes in flight are lost.
		name:  "wind-down answered",
		delay: time.Millisecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DropUp = func(seq uint64) bool { return seq%3 == 0 }
		},
		cfg: Config{Duration: time.Second, Window: 8, Timeout: 2 * time.Second},
		check: func(t *testing.T, r ran) {
			got := r.res.Summary.Counts
			if r.res.ReflectorCount != "close" || got.Lost == 0 || got.LostUp != got.Lost {
				t.Fatalf("count from %q, counts %+v, want close, and every loss up", r.res.ReflectorCount, got)
			}
			checkTotals(t, r.res)
		},
	}, {
		name:  "threshold",
		delay: 100 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DelayUpOf = func(seq uint64) time.Duration {
				if seq == 40 {
					return 2 * time.Millisecond
				}
				return 100 * time.Microsecond
			}
		},
		cfg: Config{Threshold: time.Millisecond, WarmupCount: 10, Duration: time.Minute},
		check: func(t *testing.T, r ran) {
			hit := r.res.Threshold
			if r.res.Stopped != "threshold" || hit == nil || hit.Seq != 30 || hit.RTT != 2100*time.Microsecond {
				t.Fatalf("stopped %q, hit %+v, want probe 30 (seq 40 after 10 warm-up) with 2.1ms", r.res.Stopped, hit)
			}
			checkTotals(t, r.res)
		},
	}})
}

// TestWindDownSilent: a reflector that goes silent does not hold the end of
// a run: waiting for the probes in flight and closing the session (its
// retries included) take max(Timeout, 1s) after the deadline or a signal,
// together.
func TestWindDownSilent(t *testing.T) {
	var cases []runCase
	for _, tt := range []struct {
		name    string
		cfg     Config
		signal  time.Duration // 0: none
		within  time.Duration // after the deadline or the signal
		stopped string
	}{
		{"deadline", Config{Duration: 2 * time.Second}, 0, time.Second, "duration"},
		{"deadline window", Config{Duration: 2 * time.Second, Window: 8, Timeout: 3 * time.Second}, 0, 3 * time.Second, "duration"},
		{"deadline open loop", Config{Duration: 2 * time.Second, SendInterval: 10 * time.Millisecond, sleep: time.Sleep}, 0, time.Second, "duration"},
		{"signal", Config{Duration: time.Hour}, 1500 * time.Millisecond, time.Second, "interrupted"},
		{"signal window", Config{Duration: time.Hour, Window: 8, Timeout: 3 * time.Second}, 1500 * time.Millisecond, 3 * time.Second, "interrupted"},
	} {
		cases = append(cases, runCase{
			name:  tt.name,
			delay: time.Millisecond,
			path: func(_ *testing.T, c *testconn.Conn) {
				start := time.Now()
				c.Dead = func() bool { return time.Since(start) > 500*time.Millisecond }
			},
			cfg:       tt.cfg,
			interrupt: tt.signal,
			check: func(t *testing.T, r ran) {
				end := tt.signal
				if end == 0 {
					end = tt.cfg.Duration + 2*r.c.Delay // after the handshake
				}
				if r.took > end+tt.within {
					t.Errorf("Run took %v, want at most %v", r.took, end+tt.within)
				}
				res := r.res
				if res.Stopped != tt.stopped || res.ReflectorCount != "last-reply" || res.Summary.Counts.Lost == 0 {
					t.Errorf("stopped %q, count from %q, counts %+v, want %s, last-reply and losses", res.Stopped, res.ReflectorCount, res.Summary.Counts, tt.stopped)
				}
				checkTotals(t, res)
			},
		})
	}
	runCases(t, cases)
}
