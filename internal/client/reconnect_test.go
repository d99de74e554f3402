package client

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
)

// restartAt has c's reflector restart at the nth probe written.
func restartAt(t *testing.T, c *testconn.Conn, nth int) {
	var probes int
	c.DropUp = func(uint64) bool {
		if probes++; probes == nth {
			c.Restart(t)
		}
		return false
	}
}

// TestReconnect: a reflector that restarts or goes away ends the run, or,
// with Reconnect, costs the probes in flight and a new session.
func TestReconnect(t *testing.T) {
	var events []result.Reconnect
	runCases(t, []runCase{{
		// Without Reconnect, a reflector that restarts (and so answers
		// "session unknown") ends the run at once, with partial results.
		name:    "restart ends run",
		delay:   100 * time.Microsecond,
		path:    func(t *testing.T, c *testconn.Conn) { restartAt(t, c, 100) },
		cfg:     Config{Duration: time.Minute},
		wantErr: ErrRestarted,
		check: func(t *testing.T, r ran) {
			if r.took > time.Second {
				t.Errorf("restart noticed after %v, want at the first answer of the new reflector", r.took)
			}
			res := r.res
			got := res.Summary.Counts
			if got.Sent != 100 || got.Received != 99 || got.LostUp != 1 || res.Stopped != "reflector-restarted" || res.ReflectorCount != "last-reply" || len(res.Reconnects) != 0 {
				t.Fatalf("partial result %+v stopped %q, count %q, want 99 of 100 received, the last lost up", got, res.Stopped, res.ReflectorCount)
			}
			checkTotals(t, res)
		},
	}, {
		// A closed-loop run whose reflector restarts loses the probes in
		// flight, opens a new session and completes its count; the lost
		// session's losses are all on the way up, which the estimate gets
		// right here.
		name:  "closed loop",
		delay: 100 * time.Microsecond,
		path:  func(t *testing.T, c *testconn.Conn) { restartAt(t, c, 300) },
		cfg: Config{Count: 1000, Window: 4, Reconnect: 10 * time.Second,
			Handler: Funcs{OnReconnect: func(rc result.Reconnect) { events = append(events, rc) }}},
		check: func(t *testing.T, r ran) {
			res := r.res
			if len(res.Reconnects) != 1 || len(events) != 2 || events[0].Resumed || !events[1].Resumed {
				t.Fatalf("reconnects %+v, events %+v, want one, lost then resumed", res.Reconnects, events)
			}
			rc := res.Reconnects[0]
			got := res.Summary.Counts
			if rc.Reason != "restarted" || !rc.Resumed || rc.InFlight != 4 || got.Sent != 1000 || got.Lost != 4 || got.LostUp != 4 || got.Reconnects != 1 {
				t.Fatalf("reconnect %+v, counts %+v, want 4 probes lost up in the restart, 1000 sent", rc, got)
			}
			if res.ReflectorCount != "partial" || res.Stopped != "count" {
				t.Fatalf("reflector count %q, stopped %q, want partial, count", res.ReflectorCount, res.Stopped)
			}
			checkTotals(t, res)
		},
	}, {
		// An open-loop run whose reflector goes silent for half a second
		// and comes back restarted keeps its schedule through the gap;
		// every probe sent in it is lost on the way up, and the new
		// session carries on to the end.
		name:  "open loop",
		delay: 100 * time.Microsecond,
		path: func(t *testing.T, c *testconn.Conn) {
			start := time.Now()
			var restart sync.Once
			c.Dead = func() bool {
				switch since := time.Since(start); {
				case since < time.Second:
					return false
				case since < 1500*time.Millisecond:
					return true
				}
				restart.Do(func() { c.Restart(t) })
				return false
			}
		},
		cfg: Config{Rate: 1000, Duration: 3 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond,
			Reconnect: 5 * time.Second, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			res := r.res
			got := res.Summary.Counts
			if len(res.Reconnects) != 1 || !res.Reconnects[0].Resumed || res.Reconnects[0].Reason != "silent" {
				t.Fatalf("reconnects = %+v, want one, after silence, resumed", res.Reconnects)
			}
			if got.Sent != 3000 || got.Lost < 500 || got.LostUp != got.Lost || res.ReflectorCount != "partial" || res.Stopped != "duration" {
				t.Fatalf("counts %+v, count %q, stopped %q, want 3000 sent, at least the 500 of the dead half second lost, all up", got, res.ReflectorCount, res.Stopped)
			}
			marked := 0
			for _, iv := range res.Intervals {
				marked += int(iv.Counts.Reconnects)
			}
			if marked != 1 {
				t.Errorf("intervals marked reconnected = %d, want 1", marked)
			}
			checkTotals(t, res)
		},
	}, {
		// A reflector that never comes back ends the run after the
		// reconnect time, with partial results.
		name:  "gives up",
		delay: 100 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			var writes atomic.Int64
			c.Dead = func() bool { return writes.Add(1) > 51 } // the Hello and 50 probes
		},
		cfg:     Config{Count: 1000, Timeout: 100 * time.Millisecond, Reconnect: 2 * time.Second},
		wantErr: ErrGone,
		check: func(t *testing.T, r ran) {
			// Silence (3s) and then the reconnect time.
			if r.took > 6*time.Second {
				t.Errorf("gave up after %v, want about 5s", r.took)
			}
			res := r.res
			if len(res.Reconnects) != 1 || res.Reconnects[0].Resumed || res.Summary.Counts.Received != 50 {
				t.Fatalf("reconnects %+v, counts %+v, want one not resumed, 50 received", res.Reconnects, res.Summary.Counts)
			}
			checkTotals(t, res)
		},
	}})
}
