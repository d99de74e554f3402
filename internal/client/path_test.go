package client

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
)

// TestPath: what the path does to probes and replies (loss, duplication,
// reordering, each way) is counted exactly, in its direction.
func TestPath(t *testing.T) {
	runCases(t, []runCase{{
		name:  "loss per direction",
		delay: 100 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DropUp = func(seq uint64) bool { return seq%5 == 0 }
			c.DropDown = func(seq uint64) bool { return seq%7 == 0 }
		},
		cfg: Config{Count: 100, WarmupCount: 10, Window: 4, Timeout: 50 * time.Millisecond},
		check: func(t *testing.T, r ran) {
			const n = 100
			var up, down uint64
			for seq := uint64(11); seq <= 10+n; seq++ {
				switch {
				case seq%5 == 0:
					up++
				case seq%7 == 0:
					down++
				}
			}
			res := r.res
			got := res.Summary.Counts
			if got.Sent != n || got.LostUp != up || got.LostDown != down || got.Received != n-up-down {
				t.Fatalf("counts = %+v, want sent %d, lost up %d, down %d", got, n, up, down)
			}
			if res.ReflectorCount != "close" || res.Stopped != "count" {
				t.Fatalf("reflector count from %q, stopped by %q, want close, count", res.ReflectorCount, res.Stopped)
			}
			checkTotals(t, res)
			// Every received probe took the two delays exactly (the
			// fake clock does not move while code runs).
			if d := r.c.Delay; res.Summary.RTT.Min != 2*d || res.Summary.RTT.Max != 2*d || res.Summary.Up.Max != d {
				t.Fatalf("RTT %+v, up %+v, want %v and %v exactly", res.Summary.RTT, res.Summary.Up, 2*d, d)
			}
		},
	}, {
		// Probe 5 waits for a reply that never comes while the other
		// window slot carries many more probes than the history holds.
		name:  "loss past the history",
		delay: time.Millisecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DropUp = func(seq uint64) bool { return seq == 5 }
		},
		cfg: Config{Count: 1000, Window: 2, Timeout: time.Hour, history: 64},
		check: func(t *testing.T, r ran) {
			got := r.res.Summary.Counts
			if got.Sent != 1000 || got.Received != 999 || got.Lost != 1 || got.LostUp != 1 {
				t.Fatalf("counts = %+v, want 999 received and the one probe lost on the way up", got)
			}
			checkTotals(t, r.res)
		},
	}, {
		// Duplicates and reordering are told apart by direction,
		// exactly, and the totals stay what they were. A probe a
		// millisecond. Probes ending in 1 reach the reflector twice
		// (answered twice), replies to those ending in 2 reach the client
		// twice; probes ending in 5 reach the reflector after 6 and 7,
		// replies to those ending in 8 the client after 9 and 10.
		name:  "duplicates and reordering per direction",
		delay: 200 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DupUp = func(seq uint64) bool { return seq%10 == 1 }
			c.DupDown = func(seq uint64) bool { return seq%10 == 2 }
			c.DelayUpOf = func(seq uint64) time.Duration {
				if seq%10 == 5 {
					return c.Delay + 2500*time.Microsecond
				}
				return c.Delay
			}
			c.DelayDownOf = func(seq uint64) time.Duration {
				if seq%10 == 8 {
					return c.Delay + 2500*time.Microsecond
				}
				return c.Delay
			}
		},
		cfg: Config{Rate: 1000, Duration: time.Second, ReportInterval: 100 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			res := r.res
			checkLines(t, res.Intervals, res.Summary)
			checkTotals(t, res)
			got := res.Summary.Counts
			want := result.Counts{Sent: 1000, Received: 1000, Duplicates: 200, DuplicatesUp: 100, DuplicatesDown: 100,
				Reordered: 200, ReorderedUp: 100, ReorderedDown: 100}
			if got.Sent != want.Sent || got.Received != want.Received || got.Lost != 0 || got.Late != 0 ||
				got.Duplicates != want.Duplicates || got.DuplicatesUp != want.DuplicatesUp || got.DuplicatesDown != want.DuplicatesDown ||
				got.Reordered != want.Reordered || got.ReorderedUp != want.ReorderedUp || got.ReorderedDown != want.ReorderedDown {
				t.Fatalf("counts = %+v\nwant %+v", got, want)
			}
			for i, iv := range res.Intervals {
				if c := iv.Counts; c.DuplicatesUp != 10 || c.DuplicatesDown != 10 || c.ReorderedUp != 10 || c.ReorderedDown != 10 {
					t.Errorf("interval %d counts = %+v, want 10 of each duplicate and reordering", i, c)
				}
			}
		},
	}})
}
