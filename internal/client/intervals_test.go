package client

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// checkLines checks that every interval adds up: sent = received + lost +
// in flight, lost = up + down, a round trip per reply, duplicates = up +
// down; and that together they are the summary.
func checkLines(t *testing.T, ivs []result.Interval, sum result.Interval) {
	t.Helper()
	var all result.Counts
	for i, iv := range ivs {
		c := iv.Counts
		if c.Sent != c.Received+c.Lost+c.InFlight || c.Lost != c.LostUp+c.LostDown || iv.RTT.Count != int64(c.Received) ||
			c.Duplicates != c.DuplicatesUp+c.DuplicatesDown {
			t.Errorf("interval %d (%v-%v) counts %+v, %d RTTs: want sent = received + lost + in flight, lost = up + down, an RTT per reply, duplicates = up + down",
				i, iv.Start, iv.End, c, iv.RTT.Count)
		}
		all.Add(c)
	}
	s := sum.Counts
	if all.Sent != s.Sent || all.Received+all.Lost+all.InFlight != s.Sent || all.Duplicates != s.Duplicates || s.InFlight != 0 {
		t.Errorf("intervals add up to %+v, summary %+v", all, s)
	}
}

// TestIntervalsAddUp: a probe's reply, or its loss, goes in the interval
// the probe was sent in, also when it comes in the next one: every line
// adds up, and says in which direction its own probes were lost.
func TestIntervalsAddUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		// A round trip of 4ms at a probe a millisecond: the last four
		// probes of every interval are answered in the next.
		c.delay = 2 * time.Millisecond
		dropUp := func(seq uint64) bool { return seq%10 == 3 || seq == 200 || seq == 600 }
		dropDown := func(seq uint64) bool { return seq%10 == 7 || seq == 100 || seq == 500 }
		c.dropUp, c.dropDown = dropUp, dropDown
		var seen []result.Interval
		cfg := Config{Rate: 1000, Duration: time.Second, ReportInterval: 100 * time.Millisecond, Timeout: 50 * time.Millisecond,
			sleep: time.Sleep, Handler: funcs{interval: func(iv result.Interval) { seen = append(seen, iv) }}}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Intervals) != 10 || len(seen) != 10 {
			t.Fatalf("%d intervals (%d handed over), want 10", len(res.Intervals), len(seen))
		}
		checkLines(t, res.Intervals, res.Summary)
		checkTotals(t, res)
		for i, iv := range res.Intervals {
			// Probe k leaves at (k-1)ms: interval i has probes 100i+1 to 100i+100.
			var up, down uint64
			for seq := uint64(100*i + 1); seq <= uint64(100*i+100); seq++ {
				switch {
				case dropUp(seq):
					up++
				case dropDown(seq):
					down++
				}
			}
			if got := iv.Counts; got.Sent != 100 || got.LostUp != up || got.LostDown != down || got.InFlight != 0 {
				t.Errorf("interval %d counts %+v: want 100 sent, lost %d up and %d down, none in flight", i, got, up, down)
			}
		}
	})
}

// TestIntervalsInFlight: with an interval far shorter than the timeout,
// and losses in every one, a run does not keep them all waiting: the
// oldest is reported with what is still in flight, and the line still
// adds up; the summary has the fate of every probe.
func TestIntervalsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		c.dropUp = func(seq uint64) bool { return seq%5 == 0 }
		cfg := Config{Rate: 1000, Duration: time.Second, ReportInterval: 10 * time.Millisecond, Timeout: 500 * time.Millisecond, sleep: time.Sleep}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		var inFlight uint64
		for _, iv := range res.Intervals {
			inFlight += iv.Counts.InFlight
		}
		if inFlight == 0 {
			t.Fatalf("no interval reported probes in flight: %d intervals kept waiting 500ms at once", maxPendingIntervals)
		}
		checkLines(t, res.Intervals, res.Summary)
		if s := res.Summary.Counts; s.Sent != 1000 || s.Lost != 200 || s.LostUp != 200 {
			t.Fatalf("summary %+v, want 1000 sent and 200 lost on the way up", s)
		}
	})
}

// TestDuplicatesAndReorderingPerDirection: duplicates and reordering are
// told apart by direction, exactly, and the totals stay what they were.
func TestDuplicatesAndReorderingPerDirection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 200 * time.Microsecond
		// A probe a millisecond. Probes ending in 1 reach the reflector
		// twice (answered twice), replies to those ending in 2 reach the
		// client twice; probes ending in 5 reach the reflector after 6
		// and 7, replies to those ending in 8 the client after 9 and 10.
		c.dupUp = func(seq uint64) bool { return seq%10 == 1 }
		c.dupDown = func(seq uint64) bool { return seq%10 == 2 }
		c.delayOf = func(seq uint64) time.Duration {
			if seq%10 == 5 {
				return c.delay + 2500*time.Microsecond
			}
			return c.delay
		}
		c.delayDownOf = func(seq uint64) time.Duration {
			if seq%10 == 8 {
				return c.delay + 2500*time.Microsecond
			}
			return c.delay
		}
		cfg := Config{Rate: 1000, Duration: time.Second, ReportInterval: 100 * time.Millisecond, sleep: time.Sleep}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		checkLines(t, res.Intervals, res.Summary)
		checkTotals(t, res)
		got := res.Summary.Counts
		want := result.Counts{Sent: 1000, Received: 1000, Duplicates: 200, DuplicatesUp: 100, DuplicatesDown: 100,
			Reordered: 200, ReorderedUp: 100, ReorderedDown: 100}
		if got.Sent != want.Sent || got.Received != want.Received || got.Lost != 0 || got.Late != 0 ||
			got.Duplicates != want.Duplicates || got.DuplicatesUp != want.DuplicatesUp || got.DuplicatesDown != want.DuplicatesDown ||
			got.Reordered != want.Reordered || got.ReorderedUp != want.ReorderedUp || got.ReorderedDown != want.ReorderedDown {
			t.Fatalf("counts %+v\nwant %+v", got, want)
		}
		for i, iv := range res.Intervals {
			if c := iv.Counts; c.DuplicatesUp != 10 || c.DuplicatesDown != 10 || c.ReorderedUp != 10 || c.ReorderedDown != 10 {
				t.Errorf("interval %d counts %+v, want 10 of each duplicate and reordering", i, c)
			}
		}
	})
}
