package client

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
)

// checkLines checks that every interval adds up: sent = received + lost +
// in flight, lost = up + down, a round trip per reply, duplicates = up +
// down; and that together they are the summary, with its split of the
// losses where no interval left any probe in flight.
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
	if all.InFlight == 0 && (all.LostUp != s.LostUp || all.LostDown != s.LostDown) {
		t.Errorf("intervals lost %d up and %d down, summary %d and %d", all.LostUp, all.LostDown, s.LostUp, s.LostDown)
	}
}

// handed collects the intervals handed over to the Handler.
type handed []result.Interval

func (h *handed) add(iv result.Interval) { *h = append(*h, iv) }

// TestIntervals: the intervals of a run, handed over as they end, cover
// the measurement, each adds up, and together they are the summary.
func TestIntervals(t *testing.T) {
	var pingPong, addUp handed
	// dropUp and dropDown are "add up"'s losses.
	dropUp := func(seq uint64) bool { return seq%10 == 3 || seq == 200 || seq == 600 }
	dropDown := func(seq uint64) bool { return seq%10 == 7 || seq == 100 || seq == 500 }
	runCases(t, []runCase{{
		name:  "ping-pong",
		delay: 250 * time.Microsecond,
		cfg:   Config{Duration: 3 * time.Second, WarmupDuration: 100 * time.Millisecond, Handler: Funcs{OnInterval: pingPong.add}},
		check: func(t *testing.T, r ran) {
			res := r.res
			if len(res.Intervals) != 3 || len(pingPong) != 3 {
				t.Fatalf("intervals = %d (%d handed over), want 3", len(res.Intervals), len(pingPong))
			}
			for i, iv := range res.Intervals {
				if iv.Start != time.Duration(i)*time.Second || iv.Counts.Sent != 2000 {
					t.Errorf("interval %d starts %v with %d sent, want %v and 2000 (one per 500µs)", i, iv.Start, iv.Counts.Sent, time.Duration(i)*time.Second)
				}
			}
			if got := res.Summary.Throughput.ProbesPerSecUp; got < 1999 || got > 2001 {
				t.Errorf("probes/s up = %v, want 2000", got)
			}
			if res.Summary.Counts.Lost != 0 || res.Summary.IPDV.RTT.Count != 5999 || res.Summary.IPDV.RTT.Max != 0 {
				t.Errorf("summary %+v, IPDV %+v, want no loss and 5999 zero IPDV samples", res.Summary.Counts, res.Summary.IPDV.RTT)
			}
			if res.CPU != nil {
				t.Errorf("a closed-loop run says its CPU, %+v: only open-loop runs have a schedule to explain", res.CPU)
			}
			checkTotals(t, res)
		},
	}, {
		// The last interval ends where sending ended, as the summary
		// does, not when the run's wind-down (here a lost last probe's
		// timeout) did; its rate is over its own span.
		name:  "last ends with sending",
		delay: 100 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DropDown = func(seq uint64) bool { return seq == 500 } // the last
		},
		cfg: Config{Rate: 1000, Duration: 500 * time.Millisecond, ReportInterval: 100 * time.Millisecond,
			Timeout: 300 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			res := r.res
			last := res.Intervals[len(res.Intervals)-1]
			if last.End != res.Summary.End || last.End != 500*time.Millisecond {
				t.Fatalf("last interval %v-%v, summary ends %v, want both to end at %v", last.Start, last.End, res.Summary.End, 500*time.Millisecond)
			}
			if got := last.Throughput.ProbesPerSecUp; got < 999 || got > 1001 {
				t.Errorf("last interval's rate = %v probes/s, want 1000", got)
			}
			checkTotals(t, res)
		},
	}, {
		// A probe's reply, or its loss, goes in the interval the probe
		// was sent in, also when it comes in the next one: every line
		// adds up, and says in which direction its own probes were lost.
		// A round trip of 4ms at a probe a millisecond: the last four
		// probes of every interval are answered in the next.
		name:  "add up",
		delay: 2 * time.Millisecond,
		path:  func(_ *testing.T, c *testconn.Conn) { c.DropUp, c.DropDown = dropUp, dropDown },
		cfg: Config{Rate: 1000, Duration: time.Second, ReportInterval: 100 * time.Millisecond, Timeout: 50 * time.Millisecond,
			sleep: time.Sleep, Handler: Funcs{OnInterval: addUp.add}},
		check: func(t *testing.T, r ran) {
			res := r.res
			if len(res.Intervals) != 10 || len(addUp) != 10 {
				t.Fatalf("intervals = %d (%d handed over), want 10", len(res.Intervals), len(addUp))
			}
			checkLines(t, res.Intervals, res.Summary)
			checkTotals(t, res)
			for i, iv := range res.Intervals {
				// Probe k leaves at (k-1)ms: interval i has probes
				// 100i+1 to 100i+100.
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
					t.Errorf("interval %d counts = %+v, want 100 sent, lost %d up and %d down, none in flight", i, got, up, down)
				}
			}
		},
	}, {
		// A reply lost down at an interval's end, with no reply in the
		// next interval yet when it is reported: the split stays what
		// the summary says (found by a reviewer against a change that
		// counted such losses up).
		name:  "loss down at an interval's end",
		delay: time.Millisecond,
		path:  func(_ *testing.T, c *testconn.Conn) { c.DropDown = func(seq uint64) bool { return seq == 2 } },
		cfg:   Config{SendInterval: 70 * time.Millisecond, Duration: time.Second, ReportInterval: 100 * time.Millisecond, Timeout: 50 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			if s := r.res.Summary.Counts; s.Lost != 1 || s.LostDown != 1 {
				t.Fatalf("summary %+v, want one lost down", s)
			}
			checkLines(t, r.res.Intervals, r.res.Summary)
		},
	}, {
		// With an interval far shorter than the timeout, and losses in
		// every one, a run does not keep them all waiting: the oldest is
		// reported with what is still in flight, and the line still adds
		// up; the summary has the fate of every probe.
		name:  "in flight",
		delay: 100 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DropUp = func(seq uint64) bool { return seq%5 == 0 }
		},
		cfg: Config{Rate: 1000, Duration: time.Second, ReportInterval: 10 * time.Millisecond, Timeout: 500 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			var inFlight uint64
			for _, iv := range r.res.Intervals {
				inFlight += iv.Counts.InFlight
			}
			if inFlight == 0 {
				t.Fatalf("probes in flight = 0 in every interval, want some: %d intervals kept waiting 500ms at once", maxPendingIntervals)
			}
			checkLines(t, r.res.Intervals, r.res.Summary)
			if s := r.res.Summary.Counts; s.Sent != 1000 || s.Lost != 200 || s.LostUp != 200 {
				t.Fatalf("summary = %+v, want 1000 sent and 200 lost on the way up", s)
			}
		},
	}})
}
