package client

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
)

// TestOneWay: a one-way run counts what the reflector says it received,
// measures the way up, and says when the reflector's results did not come.
func TestOneWay(t *testing.T) {
	// dead is the reflector's state in "no results": set by the receiver,
	// read by the sender.
	var dead atomic.Bool
	cases := []runCase{{
		name:  "loss up",
		delay: 300 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DropUp = func(seq uint64) bool { return seq%10 == 0 }
		},
		cfg: Config{OneWay: true, Rate: 1000, Duration: time.Second, sleep: time.Sleep, Histogram: 10},
		check: func(t *testing.T, r ran) {
			s, d := r.res.Summary, r.c.Delay
			if s.Counts.Sent != 1000 || s.Counts.Received != 900 || s.Counts.LostUp != 100 || s.Counts.LostDown != 0 {
				t.Fatalf("counts = %+v, want 1000 sent, 900 received, 100 lost on the way up", s.Counts)
			}
			if s.Up.Count != 900 || s.Up.Min != d || s.Up.Max != d || s.RTT.Count != 0 {
				t.Fatalf("up %+v, rtt count %d, want 900 delays of %v and no RTT", s.Up, s.RTT.Count, d)
			}
			// One-way jitter, from the reflector: of the 900 that came,
			// all but the 100 after a gap follow the one before them,
			// with the same delay.
			if s.IPDV.Up.Count != 800 || s.IPDV.Up.Max != 0 || s.IPDV.RTT.Count != 0 {
				t.Fatalf("ipdv = %+v, want 800 values of 0 up, and nothing else", s.IPDV)
			}
			if !r.res.Config.OneWay || r.res.Histogram == nil || r.res.Histogram.Of != "up" {
				t.Fatalf("config one-way %v, histogram %+v, want one-way and a histogram of up", r.res.Config.OneWay, r.res.Histogram)
			}
			// The client's intervals know only what it sent.
			var sent uint64
			for _, iv := range r.res.Intervals {
				sent += iv.Counts.Sent
			}
			if c := s.Counts; sent != c.Sent || c.Sent != c.Received+c.Lost {
				t.Fatalf("intervals sent %d, summary %+v, want the summary's sent, = received + lost", sent, c)
			}
		},
	}, {
		// The network delays the last one-way probe behind the Close; it
		// arrived, so it is not lost.
		name:  "last behind close",
		delay: 300 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DelayUpOf = func(seq uint64) time.Duration {
				if seq == 1000 {
					return 5 * time.Millisecond // the Close, sent right after it, overtakes it
				}
				return c.Delay
			}
		},
		cfg: Config{OneWay: true, Rate: 1000, Duration: time.Second, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			if c := r.res.Summary.Counts; c.Sent != 1000 || c.Received != 1000 || c.Lost != 0 || c.LostUp != 0 {
				t.Fatalf("counts = %+v, want all 1000 received: the last came after the Close, within the timeout", c)
			}
			if r.res.ReflectorCount != "close" {
				t.Fatalf("reflector count from %q, want close", r.res.ReflectorCount)
			}
		},
	}, {
		name:  "no results",
		delay: 300 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			dead.Store(false)
			c.Dead = dead.Load
		},
		cfg: Config{OneWay: true, Rate: 100, Duration: time.Second, sleep: time.Sleep, ReportInterval: 500 * time.Millisecond,
			Handler: Funcs{OnInterval: func(result.Interval) { dead.Store(true) }}}, // the reflector dies half way
		wantErr: ErrNoResults,
		check: func(t *testing.T, r ran) {
			if r.res == nil || r.res.Summary.Counts.Sent != 100 {
				t.Fatalf("Run = %v, %v, want ErrNoResults and the 100 sent", r.res, r.err)
			}
		},
	}}
	// A one-way run's up delays are measured when the reflector reads
	// the client's clock, and said to be; between two clocks nothing
	// estimates the offset.
	for _, id := range []uint64{0, 9} {
		cases = append(cases, runCase{
			name:  fmt.Sprintf("clock id %d", id),
			refl:  testconn.Reflector{Clock: idClock{id}},
			delay: 300 * time.Microsecond,
			cfg:   Config{OneWay: true, Rate: 1000, Count: 100, sleep: time.Sleep, Clock: idClock{id}},
			check: func(t *testing.T, r ran) {
				co := r.res.ClockOffset
				if id == 0 && co != nil {
					t.Fatalf("clock offset = %+v between clocks without identity, want none", co)
				}
				if id != 0 && (co == nil || co.Method != "same-clock" || co.Offset != 0) {
					t.Fatalf("clock offset = %+v on one clock, want same-clock, offset 0", co)
				}
			},
		})
	}
	runCases(t, cases)
}
